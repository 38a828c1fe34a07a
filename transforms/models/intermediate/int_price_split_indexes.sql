-- Each bar's split index: the product of the security's split ratios up to and including the bar
-- (two indexes divided give the split factor between two dates).

with bars as (
    select * from {{ ref('int_prices_with_actions') }}
),

indexed as (
    select
        entity_id,
        trade_date,
        product(split_ratio) over (
            partition by entity_id
            order by trade_date
            rows between unbounded preceding and current row
        ) as split_index
    from bars
)

select * from indexed
