with source as (
    select * from {{ source('market', 'prices') }}
),

renamed as (
    select
        entity_id,
        ticker,
        cast(date as date) as trade_date,
        open,
        high,
        low,
        close,
        cast(volume as bigint) as volume,
        cast(shares_outstanding as bigint) as shares_outstanding,
        dividend as inline_dividend,
        split_ratio as inline_split_ratio,
        source_file
    from source
)

select * from renamed
