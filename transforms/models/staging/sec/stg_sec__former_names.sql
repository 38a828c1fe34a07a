with source as (
    select * from {{ source('sec', 'former_names') }}
),

renamed as (
    select
        cik,
        name as former_name,
        cast(date_from as date) as name_from,
        cast(date_to as date) as name_to
    from source
)

select * from renamed
