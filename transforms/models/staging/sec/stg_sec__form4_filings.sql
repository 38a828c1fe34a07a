with source as (
    select * from {{ source('sec', 'form4_filings') }}
),

renamed as (
    select
        accession,
        schema_version,
        document_type as form_type,
        document_type = '4/A' as is_amendment,
        cast(period_of_report as date) as period_of_report,
        cast(date_of_original_submission as date) as original_filing_date,
        issuer_cik,
        issuer_name,
        issuer_ticker,
        aff10b5_one,
        remarks,
        cast(signature_date as date) as signature_date
    from source
)

select * from renamed
