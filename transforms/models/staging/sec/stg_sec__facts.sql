with source as (
    select * from {{ source('sec', 'facts') }}
),

renamed as (
    select
        cik,
        entity_name,
        taxonomy,
        tag,
        label,
        unit,
        cast(start as date) as period_start,
        cast("end" as date) as period_end,
        value,
        accession,
        fy as fiscal_year,
        fp as fiscal_period,
        form,
        cast(filed as date) as filed_date,
        frame
    from source
)

select * from renamed
