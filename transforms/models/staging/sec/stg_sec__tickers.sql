with source as (
    select * from {{ source('sec', 'tickers') }}
),

renamed as (
    select
        cik,
        ticker,
        exchange as exchange_name
    from source
)

select * from renamed
