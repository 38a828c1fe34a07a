-- Each bar with its split ratio and dividend: the corporate-actions landing first, the Quandl
-- layout's inline columns where the landing has none for that day (no split: 1, no dividend: 0).

with prices as (
    select * from {{ ref('int_prices_resolved') }}
),

actions as (
    select * from {{ ref('int_price_actions_by_day') }}
),

with_actions as (
    select
        prices.*,
        coalesce(
            actions.split_ratio,
            case when prices.inline_split_ratio > 0 then prices.inline_split_ratio end,
            1.0
        ) as split_ratio,
        coalesce(actions.dividend, prices.inline_dividend, 0.0) as dividend
    from prices
    left join actions
        on prices.entity_id = actions.entity_id
        and prices.trade_date = actions.trade_date
)

select * from with_actions
