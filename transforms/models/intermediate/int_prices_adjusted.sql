-- Each bar with its split ratio and dividend (the corporate-actions landing first, the Quandl
-- layout's inline columns where the landing has none for that day), the product of every later
-- split (the factor that puts the bar on today's share basis), the product of every split up to
-- and including the bar (its split index: two indexes divided give the split factor between two
-- dates) and the total daily return. One window pass per security, sorted once by
-- (entity_id, trade_date).

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
),

adjusted as (
    select
        *,
        coalesce(
            product(split_ratio) over (
                partition by entity_id
                order by trade_date
                rows between 1 following and unbounded following
            ),
            1.0
        ) as later_split_factor,
        product(split_ratio) over (
            partition by entity_id
            order by trade_date
            rows between unbounded preceding and current row
        ) as split_index,
        -- (adj_close + adjusted dividend) / previous adj_close - 1; the later-split factors
        -- cancel to today's split ratio
        (close + dividend) * split_ratio / nullif(
            lag(close) over (partition by entity_id order by trade_date), 0
        ) - 1 as return_daily
    from with_actions
)

select * from adjusted
