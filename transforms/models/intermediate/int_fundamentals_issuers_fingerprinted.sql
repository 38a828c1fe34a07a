-- Each issuer's fundamentals inputs, fingerprinted, and whether this build recomputes it.
--
-- inputs_print: the CIKs the security master maps to the issuer and, for each, every row of
-- that CIK's XBRL facts (rows_print: the count, the XOR and the sum of the rows' 64-bit
-- hashes); two issuers sharing a CIK share its facts, so a change to
-- them changes both prints. Null for an issuer the fundamentals mart holds that has no inputs
-- any more.
--
-- is_rebuilt: every issuer on a first or full build; otherwise those whose print differs from
-- the one the mart was last built from (kept by its post-hook beside this table,
-- macros/incremental_by_prints.sql), the issuers without inputs any more included. The
-- facts views (int_fundamental_facts_mapped, so int_fundamentals_pivoted_by_filing) carry these
-- issuers alone: every figure of an issuer comes from its own filings, so a filing recomputes
-- its issuer and no other, without mapping and pivoting every fact of every issuer.

{{ config(materialized='table') }}

with facts as (
    select * from {{ ref('stg_sec__facts') }}
),

issuers as (
    select * from {{ ref('int_issuer_ciks') }}
),

cik_facts as (
    select
        lpad(facts.cik, 10, '0') as cik,
        {{ rows_print('facts') }} as facts_print
    from facts
    group by lpad(facts.cik, 10, '0')
),

inputs as (
    select
        issuers.issuer_entity_id,
        string_agg(
            concat_ws('=', issuers.cik, coalesce(cik_facts.facts_print, '')), ','
            order by issuers.cik
        ) as inputs_print
    from issuers
    left join cik_facts
        on issuers.cik = cik_facts.cik
    group by issuers.issuer_entity_id
)

{{ select_prints_marked_rebuilt('fundamentals', 'issuer_entity_id') }}
