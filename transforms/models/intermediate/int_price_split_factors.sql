-- The split rule, in one place: every split of a security with the two factors it defines.
-- Everything that puts a per-share figure of one date on the share basis of another reads them
-- here: the prices mart (split_factor, so adj_close, and through it the API's adjust=split) and
-- int_period_end_prices (split_index, so the metrics' split-adjusted trailing EPS).
--
-- A split of ratio r (new shares per old) on day d divides every per-share figure before d by r
-- on the share basis of d or later. So:
--   split_factor_before: the product of the ratios of this split and every later one, what a
--     bar before this split (and on or after the previous one) is divided by to be on today's
--     share basis (the security's last bar); a bar after the last split is divided by 1;
--   split_index: the product of the ratios of the security's splits up to and including this
--     one, its share basis from d until the next split (1 before the first split); a figure of
--     date a is put on the basis of a later date b by multiplying it by index(a) / index(b),
--     which a split after b does not move.
-- Only days with a split are kept (the factors change on no other day): a bar reads the factor
-- of its next split, a period end the index of its last one. The splits are those of the bars
-- the prices mart publishes. Materialized as a table: finding the splits reads every bar, and
-- the prices mart, int_period_end_prices and the tests each read them.
{{ config(materialized='table') }}

with securities as (
    select entity_id from {{ ref('int_entities_unioned') }}
    where entity_grain = 'security'
),

-- the split days of the bars int_prices_labelled (so the prices mart) publishes: its bars are
-- these bars of known securities; read here without its labels, which cost a join on every bar
splits as (
    select
        entity_id,
        trade_date,
        split_ratio
    from {{ ref('int_prices_with_actions') }}
    where split_ratio <> 1
        and entity_id in (select securities.entity_id from securities)
),

factors as (
    select
        entity_id,
        trade_date,
        split_ratio,
        product(split_ratio) over (
            partition by entity_id
            order by trade_date
            rows between current row and unbounded following
        ) as split_factor_before,
        product(split_ratio) over (
            partition by entity_id
            order by trade_date
            rows between unbounded preceding and current row
        ) as split_index
    from splits
)

select * from factors
