-- The market at each fundamentals period end, per issuer: the primary security's last close on
-- or before the period end (within 7 days, so a delisted or not yet listed security gives none),
-- the issuer's market value (the prices mart's market_cap of every listed class on its last
-- session in those 7 days, summed) and the primary security's split index at the period end
-- (int_price_split_factors, where the prices mart's split factor comes from too: the index of
-- its last split on or before the period end).

-- Materialized as a table: metrics, int_fundamentals_trailing and two tests read it, and each
-- would otherwise compute it again from every bar.
{{ config(materialized='table') }}

with periods as (
    select distinct
        issuer_entity_id,
        period_end
    from {{ ref('fundamentals') }}
),

primary_securities as (
    select * from {{ ref('int_issuer_primary_securities') }}
),

issuer_securities as (
    select distinct
        issuer_entity_id,
        entity_id as security_entity_id
    from {{ ref('int_security_master_unioned') }}
    where entity_grain = 'security'
),

-- the days a period end looks back on (itself and the 7 before it): the last bar on or before
-- a period end counts only when it falls in them, so the as-of joins below sort these bars
-- alone (about one in eight) and give what they would give on every bar
period_windows as (
    select distinct periods.period_end - cast(offsets.days as integer) as trade_date
    from periods
    cross join range(8) as offsets (days)
),

prices as (
    select
        entity_id,
        date as trade_date,
        close,
        market_cap
    from {{ ref('prices') }}
    where date in (select period_windows.trade_date from period_windows)
),

split_indexes as (
    select
        entity_id,
        trade_date,
        split_index
    from {{ ref('int_price_split_factors') }}
),

primary_close as (
    select
        periods.issuer_entity_id,
        periods.period_end,
        primary_securities.security_entity_id,
        prices.trade_date as price_date,
        prices.close as price_close
    from periods
    inner join primary_securities
        on periods.issuer_entity_id = primary_securities.issuer_entity_id
    asof left join prices
        on primary_securities.security_entity_id = prices.entity_id
        and periods.period_end >= prices.trade_date
),

class_values as (
    select
        periods.issuer_entity_id,
        periods.period_end,
        issuer_securities.security_entity_id,
        prices.trade_date,
        prices.market_cap
    from periods
    inner join issuer_securities
        on periods.issuer_entity_id = issuer_securities.issuer_entity_id
    asof inner join prices
        on issuer_securities.security_entity_id = prices.entity_id
        and periods.period_end >= prices.trade_date
),

issuer_values as (
    select
        issuer_entity_id,
        period_end,
        -- in a fixed order, so that the sum is the same to the last digit on every run
        sum(market_cap order by security_entity_id) as market_cap
    from class_values
    where trade_date >= period_end - 7
    group by issuer_entity_id, period_end
),

primary_split_index as (
    select
        primary_close.issuer_entity_id,
        primary_close.period_end,
        split_indexes.split_index
    from primary_close
    asof inner join split_indexes
        on primary_close.security_entity_id = split_indexes.entity_id
        and primary_close.period_end >= split_indexes.trade_date
)

select
    primary_close.issuer_entity_id,
    primary_close.period_end,
    primary_close.security_entity_id as price_entity_id,
    case when primary_close.price_date >= primary_close.period_end - 7
        then primary_close.price_date end as price_date,
    case when primary_close.price_date >= primary_close.period_end - 7
        then primary_close.price_close end as price_close,
    issuer_values.market_cap,
    coalesce(primary_split_index.split_index, 1.0) as split_index
from primary_close
left join issuer_values
    on primary_close.issuer_entity_id = issuer_values.issuer_entity_id
    and primary_close.period_end = issuer_values.period_end
left join primary_split_index
    on primary_close.issuer_entity_id = primary_split_index.issuer_entity_id
    and primary_close.period_end = primary_split_index.period_end
