{#
    Marts incremental by a partition key (fundamentals by issuer, insider transactions by
    filing). A fingerprint model, `int_<...>_fingerprinted`, holds one row per key: the print
    of every input the key's rows are made from (inputs_print), and whether this build
    recomputes the key (is_rebuilt: every key on a first or full build; otherwise those whose
    print differs from the one the mart was last built from, including keys the mart was built
    with that have no inputs any more). The views the mart reads carry the rebuilt keys alone.
    The mart's pre-hook deletes the rebuilt keys' rows, the model appends them again, and its
    post-hook keeps the fingerprint model's prints (`<mart>__inputs_built`, beside that model)
    for the next build's comparison. A print is `rows_print` (macros/fingerprints.sql).

    Both hooks run in the mart's transaction: the rows and the prints change together (a build
    killed before its commit leaves both as they were, and the next compares with the old
    prints). The mart keeps the very prints its scope was computed from, so a build that runs
    the mart without its fingerprint model (a selection in the UI) recomputes the keys that
    model names and keeps the prints they were named from: a key changed since is still
    recomputed by the next build that runs both.
#}


{#- In the fingerprint model, after a CTE `inputs` (key, inputs_print): the select of each key
    with its print and is_rebuilt. `mart` is the mart's model name; `key` its key column. -#}
{% macro select_prints_marked_rebuilt(mart, key) %}
{%- set kept = none -%}
{%- set held = none -%}
{%- if execute and not flags.FULL_REFRESH -%}
    {%- set kept = adapter.get_relation(this.database, this.schema, mart ~ '__inputs_built') -%}
    {%- set node = graph.nodes['model.' ~ project_name ~ '.' ~ mart] -%}
    {%- set held = adapter.get_relation(node.database, node.schema, node.alias) -%}
{%- endif -%}
{%- if kept is not none and held is not none %}
select
    coalesce(inputs.{{ key }}, kept.{{ key }}) as {{ key }},
    inputs.inputs_print,
    inputs.inputs_print is distinct from kept.inputs_print as is_rebuilt
from inputs
full outer join {{ kept }} as kept
    on inputs.{{ key }} = kept.{{ key }}
{%- elif held is not none %}
-- the mart without the prints it was built from: every key, and every one it holds
select
    coalesce(inputs.{{ key }}, held.{{ key }}) as {{ key }},
    inputs.inputs_print,
    true as is_rebuilt
from inputs
full outer join (select distinct {{ key }} from {{ held }}) as held
    on inputs.{{ key }} = held.{{ key }}
{%- else %}
select
    {{ key }},
    inputs_print,
    true as is_rebuilt
from inputs
{%- endif %}
{% endmacro %}


{#- The mart's pre-hook: keep the keys `fingerprinted` marks rebuilt as `<mart>__rebuilt`
    (beside the mart: the rows this build recomputes, macros/rebuilt_rows.sql), and delete
    their rows. -#}
{% macro delete_rebuilt_keys(fingerprinted, key) %}
{{ keep_rebuilt_rows("select " ~ key ~ " from " ~ ref(fingerprinted) ~ " where is_rebuilt") }}
{% if is_incremental() %}
delete from {{ this }}
where {{ key }} in (select {{ key }} from {{ rebuilt_rows_relation() }})
{% endif %}
{% endmacro %}


{#- The mart's post-hook: keep `fingerprinted`'s prints as the ones this build was made from. -#}
{% macro keep_inputs_built(fingerprinted, key) %}
{%- set model = ref(fingerprinted) -%}
create or replace table {{ model.incorporate(path={"identifier": this.identifier ~ '__inputs_built'}) }} as
select {{ key }}, inputs_print
from {{ model }}
where inputs_print is not null
{% endmacro %}
