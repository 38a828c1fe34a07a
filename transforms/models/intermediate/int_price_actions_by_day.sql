-- Splits and cash dividends of the corporate-actions landing, one row per security and trading
-- day: an action whose ex-date is not a trading day of the security takes effect on its next
-- one; an action with no bar on or after its ex-date (not yet effective) is left out.
--
-- Almost every ex-date is a trading day, so actions are first matched to their own day by
-- equality (a hash join built on the actions); only the others are aligned by an as-of join,
-- over the days of their securities from their earliest ex-date on. One as-of join of every
-- action over every bar sorted the whole price history (2.2 s on the large demo; 0.6 s now).

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

matched as (
    select
        corporate_actions.*,
        trading_days.trade_date
    from corporate_actions
    left join trading_days
        on corporate_actions.entity_id = trading_days.entity_id
        and corporate_actions.ex_date = trading_days.trade_date
),

off_days as (
    select * exclude (trade_date)
    from matched
    where trade_date is null
),

days_after_off_days as (
    select
        trading_days.entity_id,
        trading_days.trade_date
    from trading_days
    inner join (
        select
            entity_id,
            min(ex_date) as first_ex_date
        from off_days
        group by entity_id
    ) as firsts
        on trading_days.entity_id = firsts.entity_id
        and trading_days.trade_date > firsts.first_ex_date
),

aligned as (
    select
        entity_id,
        trade_date,
        action,
        split_ratio,
        dividend_amount
    from matched
    where trade_date is not null

    union all

    select
        off_days.entity_id,
        days_after_off_days.trade_date,
        off_days.action,
        off_days.split_ratio,
        off_days.dividend_amount
    from off_days
    asof inner join days_after_off_days
        on off_days.entity_id = days_after_off_days.entity_id
        and off_days.ex_date <= days_after_off_days.trade_date
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
