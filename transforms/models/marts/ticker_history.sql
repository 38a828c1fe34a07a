-- Every ticker period of the security master: which entity a ticker named from valid_from to
-- valid_to (inclusive), including tickers shared by several share classes and tickers naming
-- an issuer with no listed security.

with ticker_periods as (
    select * from {{ ref('int_ticker_periods_classified') }}
),

final as (
    select
        cast(ticker as varchar) as ticker,
        cast(entity_id as bigint) as entity_id,
        cast(valid_from as date) as valid_from,
        cast(valid_to as date) as valid_to,
        cast(entity_grain as varchar) as entity_grain,
        cast(issuer_entity_id as bigint) as issuer_entity_id,
        cast(ticker_kind as varchar) as ticker_kind,
        cast(share_class as varchar) as share_class,
        cast(exchange as varchar) as exchange
    from ticker_periods
)

select * from final
order by ticker, valid_from, entity_id
