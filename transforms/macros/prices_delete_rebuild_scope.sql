{#
    The prices mart's incremental scope (models/marts/prices.sql), as its pre-hook: compares each
    labelled bar (int_prices_labelled) with the table's row of the same security and date, keeps
    per security the first date that differs (a bar added, removed or changed; the first bar
    when a split ratio differs) in the temp table prices_rebuild_scope, and deletes the table's
    bars from that date on. Nothing on a first or full build.
#}
{% macro prices_delete_rebuild_scope() %}
{% if is_incremental() %}
{%- set compared = [
    'ticker', 'entity_name', 'gics_sector', 'open', 'high', 'low', 'close', 'volume',
    'shares_outstanding', 'split_ratio', 'dividend', 'exchange_code'
] -%}
create or replace temp table prices_rebuild_scope as
with new_bars as (
    select entity_id, date, split_ratio, hash({{ compared | join(', ') }}) as row_hash
    from {{ ref('int_prices_labelled') }}
),

table_bars as (
    select entity_id, date, split_ratio, hash({{ compared | join(', ') }}) as row_hash
    from {{ this }}
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
)

select
    entity_id,
    case when bool_or(split_differs) then date '0001-01-01' else min(date) end as rebuild_from
from differing
group by entity_id;

delete from {{ this }} as kept
using prices_rebuild_scope as scope
where kept.entity_id = scope.entity_id
    and kept.date >= scope.rebuild_from;
{% endif %}
{% endmacro %}
