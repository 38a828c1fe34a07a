with source as (
    select * from {{ source('sec', 'companies') }}
),

renamed as (
    select
        cik,
        name as company_name,
        entity_type,
        sic as sic_code,
        sic_description,
        category as filer_category,
        fiscal_year_end,
        state_of_incorporation,
        ein
    from source
)

select * from renamed
