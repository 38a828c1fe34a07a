-- Cumulative split index of each security: the product of the split ratios (new shares per old)
-- of every split effective on or before ex_date. Dividing two indexes gives the split factor
-- between two dates (1 before the first split).

with corporate_actions as (
    select * from {{ ref('stg_market__corporate_actions') }}
),

splits as (
    select
        entity_id,
        ex_date,
        exp(sum(ln(split_ratio))) as split_ratio
    from corporate_actions
    where action = 'split'
        and split_ratio > 0
    group by entity_id, ex_date
),

indexed as (
    select
        entity_id,
        ex_date,
        exp(sum(ln(split_ratio)) over (
            partition by entity_id order by ex_date
            rows between unbounded preceding and current row
        )) as split_index
    from splits
)

select * from indexed
