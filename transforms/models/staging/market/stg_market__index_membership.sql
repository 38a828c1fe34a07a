with source as (
    select * from {{ source('market', 'index_membership') }}
),

renamed as (
    select
        "index" as index_code,
        entity_id,
        ticker,
        cast(added as date) as added_date,
        cast(removed as date) as removed_date
    from source
)

select * from renamed
