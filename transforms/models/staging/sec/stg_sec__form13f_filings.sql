with source as (
    select * from {{ source('sec', 'form13f_filings') }}
),

renamed as (
    select
        accession,
        form_type,
        cast(filed as date) as filed_date,
        cast(period as date) as report_date,
        manager_cik,
        manager_name,
        report_type,
        amendment_number,
        amendment_type,
        coalesce(is_amendment, false) as is_amendment,
        table_entry_total,
        table_value_total,
        value_unit,
        cover_value_difference_usd,
        cover_value_difference_ratio,
        cover_total_status
    from source
)

select * from renamed
