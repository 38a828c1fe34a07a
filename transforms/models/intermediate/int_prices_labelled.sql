-- Every bar with what the prices mart shows beside its adjustments: the ticker, name, sector
-- and venue the security had on that date, in the mart's column names and types. Everything the
-- mart derives (the adjusted close, the daily return, the market value) is computed from these
-- columns, so two builds whose rows agree here agree in the mart.

with bars as (
    select * from {{ ref('int_prices_with_actions') }}
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
        cast(bars.entity_id as bigint) as entity_id,
        cast(coalesce(own_ticker_periods.ticker, bars.source_ticker) as varchar) as ticker,
        cast(coalesce(former_names.former_name, entities.name) as varchar) as entity_name,
        cast(entities.gics_sector as varchar) as gics_sector,
        cast(bars.trade_date as date) as date,
        cast(bars.open as double) as open,
        cast(bars.high as double) as high,
        cast(bars.low as double) as low,
        cast(bars.close as double) as close,
        cast(bars.volume as bigint) as volume,
        cast(bars.shares_outstanding as bigint) as shares_outstanding,
        cast(bars.split_ratio as double) as split_ratio,
        cast(bars.dividend as double) as dividend,
        cast(coalesce(own_ticker_periods.exchange, entities.exchange) as varchar) as exchange_code
    from bars
    inner join entities
        on bars.entity_id = entities.entity_id
    left join own_ticker_periods
        on bars.entity_id = own_ticker_periods.entity_id
        and bars.trade_date >= own_ticker_periods.valid_from
        and bars.trade_date <= own_ticker_periods.period_to
    left join former_names
        on entities.cik = former_names.cik
        and bars.trade_date >= former_names.name_from
        and bars.trade_date <= former_names.name_to
)

select * from labelled
