-- Daily bars of every security as traded, with the split factor (the product of the ratios of
-- every later split, from int_price_split_factors: the one place the split rule lives) and the
-- split-adjusted close it gives (today's share basis), the day's split ratio and dividend, the
-- total daily return, market value, and the ticker, name and venue the security had on that date.
-- The API's adjust=split divides by the published split_factor too.
--
-- Incremental: a build rebuilds, per security, its bars from the first one whose labelled row
-- (int_prices_labelled) differs from the table's, or all its bars when a split changed (the
-- split factor of every earlier bar is the product of the later splits). The pre-hook computes that
-- scope, reads the labelled bars to rebuild and deletes those bars; the model appends them
-- again. A daily file adds one bar per security: each is rebuilt from its new bar on, with the
-- bar before it read for the return.
-- Only the years whose inputs changed are compared (int_price_inputs_fingerprinted, against the
-- fingerprints the post-hook kept from the last build), so a new day compares this year's bars.
-- `--full-refresh` (a forced build, or other code) rebuilds the table whole.
--
-- depends_on: {{ ref('int_price_inputs_fingerprinted') }}

{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='fail',
    pre_hook="{{ prices_delete_rebuild_scope() }}",
    post_hook="{{ prices_keep_inputs_built() }}",
) }}

with

{% if is_incremental() %}

-- the pre-hook's temp table: per security to rebuild, its bars from the last one kept (whose
-- close is the first rebuilt bar's previous close), with the first date rebuilt
bars as (
    select * from prices_rebuild_bars
),

{% else %}

bars as (
    select
        *,
        date '0001-01-01' as rebuild_from
    from {{ ref('int_prices_labelled') }}
),

{% endif %}

split_factors as (
    select
        entity_id,
        trade_date,
        split_factor_before
    from {{ ref('int_price_split_factors') }}
),

adjusted as (
    select
        bars.*,
        -- the factor of the bar's next split (1 after the last one)
        coalesce(next_split.split_factor_before, 1.0) as split_factor,
        -- (adj_close + adjusted dividend) / previous adj_close - 1; the two bars' split factors
        -- cancel to the day's split ratio
        (bars.close + bars.dividend) * bars.split_ratio / nullif(
            lag(bars.close) over (partition by bars.entity_id order by bars.date), 0
        ) - 1 as return_daily
    from bars
    asof left join split_factors as next_split
        on bars.entity_id = next_split.entity_id
        and bars.date < next_split.trade_date
),

final as (
    select
        entity_id,
        ticker,
        entity_name,
        gics_sector,
        date,
        cast('trade' as varchar) as price_basis,
        open,
        high,
        low,
        close,
        cast(close / split_factor as double) as adj_close,
        volume,
        shares_outstanding,
        cast(return_daily as double) as return_daily,
        split_ratio,
        cast(split_factor as double) as split_factor,
        dividend,
        cast(close * shares_outstanding as double) as market_cap,
        exchange_code
    from adjusted
    where date >= rebuild_from
)

select * from final
order by entity_id, date
