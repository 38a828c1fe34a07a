-- Each Form 4 filing's inputs, fingerprinted, and whether this build recomputes its lines in
-- the insider_transactions mart (macros/incremental_by_prints.sql).
--
-- inputs_print: the prints (rows_print) of the filing's own rows (its header, lines and
-- reporting owners), of its rows in the filer's submissions index (the filing date), and of
-- every security master row of its issuer's CIK. Null for a filing the mart holds that is not
-- in landing any more.
--
-- is_rebuilt: every filing on a first or full build; otherwise those whose print differs from
-- the one the mart was last built from: a new filing, an amended or removed one, one whose
-- filing date arrived with its filer's submissions, or one whose issuer changed in the
-- security master. The mart reads the lines of these filings alone.

{{ config(materialized='table') }}

with form4_filings as (
    select * from {{ ref('stg_sec__form4_filings') }}
),

lines as (
    select * from {{ ref('stg_sec__form4_lines') }}
),

owners as (
    select * from {{ ref('stg_sec__form4_owners') }}
),

filing_index as (
    select * from {{ ref('stg_sec__filings') }}
),

security_master as (
    select * from {{ ref('int_security_master_unioned') }}
),

header_prints as (
    select
        accession,
        {{ rows_print('form4_filings') }} as header_print,
        min(lpad(issuer_cik, 10, '0')) as issuer_cik
    from form4_filings
    group by accession
),

line_prints as (
    select accession, {{ rows_print('lines') }} as lines_print
    from lines
    group by accession
),

owner_prints as (
    select accession, {{ rows_print('owners') }} as owners_print
    from owners
    group by accession
),

index_prints as (
    select accession, {{ rows_print('filing_index') }} as index_print
    from filing_index
    where accession in (select header_prints.accession from header_prints)
    group by accession
),

issuer_prints as (
    select cik, {{ rows_print('security_master') }} as issuer_print
    from security_master
    where cik is not null
    group by cik
),

inputs as (
    select
        header_prints.accession as document_id,
        concat_ws(
            '|',
            header_prints.header_print,
            coalesce(line_prints.lines_print, ''),
            coalesce(owner_prints.owners_print, ''),
            coalesce(index_prints.index_print, ''),
            coalesce(issuer_prints.issuer_print, '')
        ) as inputs_print
    from header_prints
    left join line_prints
        on header_prints.accession = line_prints.accession
    left join owner_prints
        on header_prints.accession = owner_prints.accession
    left join index_prints
        on header_prints.accession = index_prints.accession
    left join issuer_prints
        on header_prints.issuer_cik = issuer_prints.cik
)

{{ select_prints_marked_rebuilt('insider_transactions', 'document_id') }}
