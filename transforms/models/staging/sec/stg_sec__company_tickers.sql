with source as (
    select * from {{ source('sec', 'company_tickers') }}
),

renamed as (
    select
        cik,
        name as company_name,
        ticker,
        case exchange
            when 'Nasdaq' then 'XNAS'
            when 'NYSE' then 'XNYS'
            when 'CBOE' then 'BATS'
            when 'OTC' then 'OTCM'
            else exchange
        end as exchange,
        exchange as exchange_name,
        cast(seen_on as date) as seen_on
    from source
)

select * from renamed
