-- What each security's labelled bars (int_prices_labelled) are made from, fingerprinted per
-- security and year: its resolved bars of that year (bars_print), and, the same on each of its
-- years, every row of its corporate actions, its entity row, its own ticker periods and its
-- issuer's former names (labels_print: whole rows, so that a column the labels come to read is
-- already in it). A year whose prints equal those the prices mart was last built from holds
-- the same labelled bars, except where an earlier change moves into it; the mart rebuilds a
-- security from its first changed bar on, so its incremental build compares only the years
-- whose prints changed (macros/prices_delete_rebuild_scope.sql).
--
-- A print is the count, the XOR and the sum of the rows' 64-bit hashes (two changes that cancel
-- in one do not in the other; rows_print, macros/fingerprints.sql), as the published parts are
-- fingerprinted.

{{ config(materialized='table') }}

with bars as (
    select * from {{ ref('int_prices_resolved') }}
),

actions as (
    select * from {{ ref('stg_market__corporate_actions') }}
),

entities as (
    select * from {{ ref('int_entities_unioned') }}
    where entity_grain = 'security'
),

own_ticker_periods as (
    select * from {{ ref('int_security_own_ticker_periods') }}
),

former_names as (
    select * from {{ ref('int_issuer_former_name_periods') }}
),

bars_by_year as (
    select
        entity_id,
        year(trade_date) as year,
        {{ rows_print('bars') }} as bars_print
    from bars
    group by entity_id, year(trade_date)
),

-- each security's label rows, tagged by kind so that equal rows of two kinds differ
label_rows as (
    select entity_id, hash('entity', entities) as row_hash from entities
    union all
    select entity_id, hash('action', actions) from actions
    union all
    select entity_id, hash('ticker', own_ticker_periods) from own_ticker_periods
    union all
    select entities.entity_id, hash('former_name', former_names)
    from entities
    inner join former_names
        on entities.cik = former_names.cik
),

labels as (
    select
        entity_id,
        {{ rows_print('row_hash') }} as labels_print
    from label_rows
    group by entity_id
),

fingerprinted as (
    select
        bars_by_year.entity_id,
        bars_by_year.year,
        bars_by_year.bars_print,
        coalesce(labels.labels_print, '') as labels_print
    from bars_by_year
    left join labels
        on bars_by_year.entity_id = labels.entity_id
)

select * from fingerprinted
