-- Splits and cash dividends of the corporate-actions landing, one row per security and trading
-- day: an action whose ex-date is not a trading day of the security takes effect on its next
-- one; an action with no bar on or after its ex-date (not yet effective) is left out.

with corporate_actions as (
    select * from {{ ref('stg_market__corporate_actions') }}
),

trading_days as (
    select
        entity_id,
        trade_date
    from {{ ref('int_prices_resolved') }}
    where entity_id in (select entity_id from corporate_actions)
),

aligned as (
    select
        corporate_actions.entity_id,
        trading_days.trade_date,
        corporate_actions.action,
        corporate_actions.split_ratio,
        corporate_actions.dividend_amount
    from corporate_actions
    asof inner join trading_days
        on corporate_actions.entity_id = trading_days.entity_id
        and corporate_actions.ex_date <= trading_days.trade_date
),

by_day as (
    select
        entity_id,
        trade_date,
        -- in a fixed order, so that several actions of a day give the same result on every run
        product(split_ratio order by split_ratio) filter (where action = 'split') as split_ratio,
        sum(dividend_amount order by dividend_amount) filter (
            where action = 'dividend'
        ) as dividend
    from aligned
    group by entity_id, trade_date
)

select * from by_day
