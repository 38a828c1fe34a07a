-- Form 4 and 4/A lines: one row per line of Table I (non-derivative) and Table II (derivative),
-- transactions and holdings, keyed by the filing's accession (document_id) and the line's
-- sequence. entity_id is the issuer's entity (CIK through the security master). The filing date
-- is the one in the issuer's submissions filing index, else the signature date. A holding line
-- has no transaction: its transaction_date is the filing's period of report.
--
-- Incremental by filing: a build recomputes the lines of the filings
-- int_form4_filings_fingerprinted marks is_rebuilt (new, amended or removed filings, a filing
-- date that arrived, an issuer changed in the security master; every filing on a first or full
-- build); the pre-hook deletes their rows first (macros/incremental_by_prints.sql). Every row
-- is made from its own filing's rows and its issuer's.

{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='fail',
    pre_hook="{{ delete_rebuilt_keys('int_form4_filings_fingerprinted', 'document_id') }}",
    post_hook="{{ keep_inputs_built('int_form4_filings_fingerprinted', 'document_id') }}",
) }}

with filings_to_build as (
    select document_id
    from {{ ref('int_form4_filings_fingerprinted') }}
    where is_rebuilt
),

lines as (
    select * from {{ ref('stg_sec__form4_lines') }}
    where accession in (select filings_to_build.document_id from filings_to_build)
),

form4_filings as (
    select * from {{ ref('stg_sec__form4_filings') }}
),

owners as (
    select * from {{ ref('int_form4_owners_combined') }}
),

filing_index as (
    select * from {{ ref('stg_sec__filings') }}
),

issuers as (
    select
        cik,
        issuer_entity_id,
        issuer_name
    from {{ ref('int_security_master_unioned') }}
    where cik is not null
    qualify row_number() over (partition by cik order by valid_from desc, entity_id) = 1
),

filing_dates as (
    select
        form4_filings.accession,
        min(filing_index.filing_date) as filing_date
    from form4_filings
    inner join filing_index
        on form4_filings.accession = filing_index.accession
    group by form4_filings.accession
),

joined as (
    select
        lines.accession as document_id,
        lines.line_sequence,
        issuers.issuer_entity_id as entity_id,
        nullif(upper(trim(form4_filings.issuer_ticker)), '') as ticker,
        coalesce(form4_filings.issuer_name, issuers.issuer_name) as entity_name,
        lpad(form4_filings.issuer_cik, 10, '0') as issuer_cik,
        coalesce(filing_dates.filing_date, form4_filings.signature_date) as filing_date,
        coalesce(lines.transaction_date, form4_filings.period_of_report) as transaction_date,
        form4_filings.form_type,
        form4_filings.is_amendment,
        lines.is_derivative,
        lines.is_holding,
        nullif(trim(lines.transaction_code), '') as transaction_code,
        lines.shares,
        lines.price_per_share,
        lines.acquired_disposed,
        lines.shares_owned_following,
        lines.direct_or_indirect,
        lines.nature_of_ownership,
        owners.owner_cik,
        owners.owner_name,
        owners.owner_relationship,
        lines.security_title,
        lines.conversion_or_exercise_price,
        lines.exercise_date,
        lines.expiration_date,
        lines.underlying_title,
        lines.underlying_shares,
        lines.footnote_ids
    from lines
    inner join form4_filings
        on lines.accession = form4_filings.accession
    left join owners
        on lines.accession = owners.accession
    left join filing_dates
        on lines.accession = filing_dates.accession
    left join issuers
        on lpad(form4_filings.issuer_cik, 10, '0') = issuers.cik
),

final as (
    select
        cast(document_id as varchar) as document_id,
        cast(line_sequence as integer) as line_sequence,
        cast(entity_id as bigint) as entity_id,
        cast(ticker as varchar) as ticker,
        cast(entity_name as varchar) as entity_name,
        cast(issuer_cik as varchar) as issuer_cik,
        cast(filing_date as date) as filing_date,
        cast(transaction_date as date) as transaction_date,
        cast(form_type as varchar) as form_type,
        cast(is_amendment as boolean) as is_amendment,
        cast(is_derivative as boolean) as is_derivative,
        cast(is_holding as boolean) as is_holding,
        cast(transaction_code as varchar) as transaction_code,
        cast(transaction_code is not null as boolean) as is_coded,
        cast(shares as double) as shares,
        cast(price_per_share as double) as price_per_share,
        cast(acquired_disposed as varchar) as acquired_disposed,
        cast(shares_owned_following as double) as shares_owned_following,
        cast(direct_or_indirect as varchar) as direct_or_indirect,
        cast(nature_of_ownership as varchar) as nature_of_ownership,
        cast(owner_cik as varchar) as owner_cik,
        cast(owner_name as varchar) as owner_name,
        cast(owner_relationship as varchar) as owner_relationship,
        cast(security_title as varchar) as security_title,
        cast(conversion_or_exercise_price as double) as conversion_or_exercise_price,
        cast(exercise_date as date) as exercise_date,
        cast(expiration_date as date) as expiration_date,
        cast(underlying_title as varchar) as underlying_title,
        cast(underlying_shares as double) as underlying_shares,
        cast(footnote_ids as varchar) as footnote_ids
    from joined
)

select * from final
