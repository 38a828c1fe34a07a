-- Each split's index: the product of the security's split ratios up to and including that day
-- (two indexes divided give the split factor between two dates; before a security's first
-- split its index is 1). Only days with a split are kept, since the index changes on no other
-- day: int_period_end_prices takes the last split on or before a period end, and the window
-- runs over a few thousand splits instead of every bar. Materialized as a table: finding the
-- splits reads every bar, and int_period_end_prices and the not-null test would each do it.
{{ config(materialized='table') }}

with splits as (
    select
        entity_id,
        trade_date,
        split_ratio
    from {{ ref('int_prices_with_actions') }}
    where split_ratio <> 1
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
    from splits
)

select * from indexed
