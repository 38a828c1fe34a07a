-- Daily bars of every security as traded, with the split-adjusted close (today's share basis),
-- the day's split ratio and dividend, the total daily return, market value, and the ticker, name
-- and venue the security had on that date.

with prices as (
    select * from {{ ref('int_prices_adjusted') }}
),

entities as (
    select * from {{ ref('int_entities_unioned') }}
    where entity_grain = 'security'
),

own_ticker_periods as (
    select * from {{ ref('int_security_own_ticker_periods') }}
),

former_names as (
    select * from {{ ref('int_issuer_former_name_periods') }}
),

labelled as (
    select
        prices.*,
        coalesce(own_ticker_periods.ticker, prices.source_ticker) as ticker,
        coalesce(former_names.former_name, entities.name) as entity_name,
        entities.gics_sector,
        coalesce(own_ticker_periods.exchange, entities.exchange) as exchange_code
    from prices
    inner join entities
        on prices.entity_id = entities.entity_id
    left join own_ticker_periods
        on prices.entity_id = own_ticker_periods.entity_id
        and prices.trade_date >= own_ticker_periods.valid_from
        and prices.trade_date <= own_ticker_periods.period_to
    left join former_names
        on entities.cik = former_names.cik
        and prices.trade_date >= former_names.name_from
        and prices.trade_date <= former_names.name_to
),

final as (
    select
        cast(entity_id as bigint) as entity_id,
        cast(ticker as varchar) as ticker,
        cast(entity_name as varchar) as entity_name,
        cast(gics_sector as varchar) as gics_sector,
        cast(trade_date as date) as date,
        cast('trade' as varchar) as price_basis,
        cast(open as double) as open,
        cast(high as double) as high,
        cast(low as double) as low,
        cast(close as double) as close,
        cast(close / later_split_factor as double) as adj_close,
        cast(volume as bigint) as volume,
        cast(shares_outstanding as bigint) as shares_outstanding,
        cast(return_daily as double) as return_daily,
        cast(split_ratio as double) as split_ratio,
        cast(dividend as double) as dividend,
        cast(close * shares_outstanding as double) as market_cap,
        cast(exchange_code as varchar) as exchange_code
    from labelled
)

select * from final
order by entity_id, date
