{#
    The prices mart's incremental scope (models/marts/prices.sql), as its pre-hook: per
    security, the first date whose labelled bar (int_prices_labelled) differs from the table's
    row of the same security and date (a bar added, removed or changed; the first bar when a
    split ratio differs), kept in the temp table prices_rebuild_scope; then the table's bars
    from that date on are deleted. The scope is kept as prices__rebuilt (macros/rebuilt_rows.sql).
    Nothing on a first or full build.

    Only the years whose inputs changed are compared: the fingerprints of each security's
    inputs per year (int_price_inputs_fingerprinted) against those the table was last built
    from (prices__inputs_built, written by the mart's post-hook, prices_keep_inputs_built). A
    security whose labels or actions changed is compared from its first bar; one whose bars of
    a year changed, from that year on (a change moves an action or a return only later in
    time, and the mart rebuilds a security from its first differing bar to its last). Without
    kept fingerprints every bar is compared. A new day compares this year's bars, not twenty
    years of them.
#}
{% macro prices_delete_rebuild_scope() %}
{{ keep_rebuilt_rows(
    "select entity_id, rebuild_from as date__from from prices_rebuild_scope"
) }}
{% if is_incremental() %}
{%- set compared = [
    'ticker', 'entity_name', 'gics_sector', 'open', 'high', 'low', 'close', 'volume',
    'shares_outstanding', 'split_ratio', 'dividend', 'exchange_code'
] -%}
{%- set inputs = ref('int_price_inputs_fingerprinted') -%}
{%- set built = adapter.get_relation(this.database, this.schema, prices_inputs_built_name()) -%}
{%- set compare_from -%}
    {%- if built is none -%}
        select entity_id, date '0001-01-01' as compare_from from {{ inputs }}
        union all
        select entity_id, date '0001-01-01' from {{ this }}
    {%- else -%}
        with changed_years as (
            select
                coalesce(now.entity_id, kept.entity_id) as entity_id,
                make_date(coalesce(now.year, kept.year), 1, 1) as compare_from
            from {{ inputs }} as now
            full outer join {{ built }} as kept
                on now.entity_id = kept.entity_id
                and now.year = kept.year
            where now.bars_print is distinct from kept.bars_print
        ),

        changed_labels as (
            select
                coalesce(now.entity_id, kept.entity_id) as entity_id,
                date '0001-01-01' as compare_from
            from (
                select entity_id, min(labels_print) as labels_print from {{ inputs }} group by 1
            ) as now
            full outer join (
                select entity_id, min(labels_print) as labels_print from {{ built }} group by 1
            ) as kept
                on now.entity_id = kept.entity_id
            where now.labels_print is distinct from kept.labels_print
        )

        select * from changed_years
        union all
        select * from changed_labels
    {%- endif -%}
{%- endset -%}
{#- Run now, while the hook renders (before the model's transaction; temp tables of this
    connection): each earliest date becomes a constant that DuckDB pushes down to the scans of
    the bars, which a bound read from a table is not. -#}
{%- do run_query(
    "create or replace temp table prices_compare_scope as select entity_id, "
    ~ "min(compare_from) as compare_from from (" ~ compare_from ~ ") group by entity_id"
) -%}
{%- set earliest_compared = first_value("select min(compare_from) from prices_compare_scope") -%}
{%- set rebuild_scope -%}
with scope as (
    select * from prices_compare_scope
),

new_bars as (
    select
        labelled.entity_id,
        labelled.date,
        labelled.split_ratio,
        hash({{ compared | join(', ') }}) as row_hash
    from {{ ref('int_prices_labelled') }} as labelled
    inner join scope
        on labelled.entity_id = scope.entity_id
        and labelled.date >= scope.compare_from
    where {{ on_or_after('labelled.date', earliest_compared) }}
),

table_bars as (
    select
        kept.entity_id,
        kept.date,
        kept.split_ratio,
        hash({{ compared | join(', ') }}) as row_hash
    from {{ this }} as kept
    inner join scope
        on kept.entity_id = scope.entity_id
        and kept.date >= scope.compare_from
    where {{ on_or_after('kept.date', earliest_compared) }}
),

differing as (
    select
        coalesce(new_bars.entity_id, table_bars.entity_id) as entity_id,
        coalesce(new_bars.date, table_bars.date) as date,
        coalesce(new_bars.split_ratio, 1.0) <> coalesce(table_bars.split_ratio, 1.0)
            as split_differs
    from new_bars
    full outer join table_bars
        on new_bars.entity_id = table_bars.entity_id
        and new_bars.date = table_bars.date
    where new_bars.row_hash is distinct from table_bars.row_hash
),

rebuilt as (
    select
        entity_id,
        case when bool_or(split_differs) then date '0001-01-01' else min(date) end
            as rebuild_from
    from differing
    group by entity_id
)

-- the last bar kept before the rebuilt ones: its close is the first rebuilt bar's previous
select
    rebuilt.entity_id,
    rebuilt.rebuild_from,
    max(kept.date) as last_kept_date
from rebuilt
left join {{ this }} as kept
    on rebuilt.entity_id = kept.entity_id
    and kept.date < rebuilt.rebuild_from
group by rebuilt.entity_id, rebuilt.rebuild_from
{%- endset -%}
{%- do run_query("create or replace temp table prices_rebuild_scope as " ~ rebuild_scope) -%}
{%- set earliest_read = first_value(
    "select min(coalesce(last_kept_date, rebuild_from)) from prices_rebuild_scope"
) -%}
-- the labelled bars the model rebuilds from (models/marts/prices.sql): per security, from its
-- last kept bar (read for the return) on
create or replace temp table prices_rebuild_bars as
select
    labelled.*,
    scope.rebuild_from
from {{ ref('int_prices_labelled') }} as labelled
inner join prices_rebuild_scope as scope
    on labelled.entity_id = scope.entity_id
    and labelled.date >= coalesce(scope.last_kept_date, scope.rebuild_from)
where {{ on_or_after('labelled.date', earliest_read) }};

delete from {{ this }} as kept
using prices_rebuild_scope as scope
where kept.entity_id = scope.entity_id
    and kept.date >= scope.rebuild_from;
{% endif %}
{% endmacro %}


{#- The first column of the first row of ``sql`` (run now; None at parse time). -#}
{% macro first_value(sql) %}
{%- if execute -%}
    {{- return(run_query(sql).columns[0].values()[0]) -}}
{%- endif -%}
{{- return(none) -}}
{% endmacro %}


{#- ``column >= day`` as SQL; false when ``day`` is None (no row to read). -#}
{% macro on_or_after(column, day) %}
{%- if day is none -%}false{%- else -%}{{ column }} >= date '{{ day }}'{%- endif -%}
{% endmacro %}


{#- The name of the table of input fingerprints the prices mart was last built from. -#}
{% macro prices_inputs_built_name() %}prices__inputs_built{% endmacro %}


{#
    The prices mart's post-hook: keep the fingerprints of the inputs it was just built from
    (int_price_inputs_fingerprinted), for the next incremental build's scope (above). It runs in
    the model's transaction, so the table and the fingerprints change together.
#}
{% macro prices_keep_inputs_built() %}
create or replace table {{ this.incorporate(path={"identifier": prices_inputs_built_name()}) }} as
select * from {{ ref('int_price_inputs_fingerprinted') }}
{% endmacro %}
