-- Each issuer's fundamentals inputs, fingerprinted, and whether this build recomputes it.
--
-- inputs_print: the CIKs the security master maps to the issuer and, for each, every row of
-- that CIK's XBRL facts (the count, the XOR and the sum of the rows' 64-bit hashes, as the
-- prices' inputs are fingerprinted); two issuers sharing a CIK share its facts, so a change to
-- them changes both prints. Null for an issuer the fundamentals mart holds that has no inputs
-- any more.
--
-- is_rebuilt: every issuer on a first or full build; otherwise those whose print differs from
-- the one the mart was last built from (kept by its post-hook beside this table,
-- macros/fundamentals_incremental.sql), the issuers without inputs any more included. The
-- facts views (int_fundamental_facts_mapped, so int_fundamentals_pivoted_by_filing) carry these
-- issuers alone: every figure of an issuer comes from its own filings, so a filing recomputes
-- its issuer and no other, without mapping and pivoting every fact of every issuer.
--
-- The prints and the scope come from one build of this one table, and the mart keeps these
-- very prints: a build that runs the mart without this table (a selection in the UI) recomputes
-- the issuers this table names and keeps the prints it was computed from, so an issuer changed
-- since is still recomputed by the next build that runs both.

{{ config(materialized='table') }}

{%- set kept = none -%}
{%- set mart = none -%}
{%- if execute and not flags.FULL_REFRESH -%}
    {%- set kept = adapter.get_relation(
        this.database, this.schema, fundamentals_inputs_built_name()
    ) -%}
    {%- set node = graph.nodes['model.findata.fundamentals'] -%}
    {%- set mart = adapter.get_relation(node.database, node.schema, node.alias) -%}
{%- endif %}

with facts as (
    select * from {{ ref('stg_sec__facts') }}
),

security_master as (
    select * from {{ ref('stg_market__security_master') }}
),

issuers as (
    select distinct
        cik,
        issuer_entity_id
    from security_master
    where cik is not null
        and issuer_entity_id is not null
),

cik_facts as (
    select
        lpad(facts.cik, 10, '0') as cik,
        concat_ws(':', count(*), bit_xor(hash(facts)), sum(hash(facts)::hugeint)) as facts_print
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
),

{% if kept is not none and mart is not none %}

fingerprinted as (
    select
        coalesce(inputs.issuer_entity_id, kept.issuer_entity_id) as issuer_entity_id,
        inputs.inputs_print,
        inputs.inputs_print is distinct from kept.inputs_print as is_rebuilt
    from inputs
    full outer join {{ kept }} as kept
        on inputs.issuer_entity_id = kept.issuer_entity_id
)

{% elif mart is not none %}

-- the mart without the prints it was built from: every issuer, and every one it holds
fingerprinted as (
    select
        coalesce(inputs.issuer_entity_id, held.issuer_entity_id) as issuer_entity_id,
        inputs.inputs_print,
        true as is_rebuilt
    from inputs
    full outer join (select distinct issuer_entity_id from {{ mart }}) as held
        on inputs.issuer_entity_id = held.issuer_entity_id
)

{% else %}

fingerprinted as (
    select
        issuer_entity_id,
        inputs_print,
        true as is_rebuilt
    from inputs
)

{% endif %}

select * from fingerprinted
