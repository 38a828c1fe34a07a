with source as (
    select * from {{ source('sec', 'filings') }}
),

renamed as (
    select
        cik,
        accession,
        form,
        cast(filing_date as date) as filing_date,
        cast(report_date as date) as report_date,
        acceptance_datetime,
        primary_document,
        primary_doc_description,
        size as size_bytes,
        is_xbrl,
        is_inline_xbrl
    from source
)

select * from renamed
