{#
    The fundamentals mart is incremental by issuer (models/marts/fundamentals.sql): the issuers
    to recompute are those int_fundamentals_issuers_fingerprinted marks is_rebuilt, whose rows
    the facts views alone carry. Its pre-hook deletes those issuers' rows, the model appends
    them again, and its post-hook keeps that table's prints for the next build's comparison.
    Both hooks run in the model's transaction: the rows and the prints change together (a
    build killed before its commit leaves both as they were, and the next compares against
    the old prints).
#}

{#- The name of the table of input prints the fundamentals mart was last built from (beside
    int_fundamentals_issuers_fingerprinted, which reads it). -#}
{% macro fundamentals_inputs_built_name() %}fundamentals__inputs_built{% endmacro %}


{% macro fundamentals_delete_rebuild_scope() %}
{% if is_incremental() %}
delete from {{ this }}
where issuer_entity_id in (
    select issuer_entity_id
    from {{ ref('int_fundamentals_issuers_fingerprinted') }}
    where is_rebuilt
)
{% endif %}
{% endmacro %}


{% macro fundamentals_keep_inputs_built() %}
{%- set fingerprinted = ref('int_fundamentals_issuers_fingerprinted') -%}
{%- set kept = fingerprinted.incorporate(path={"identifier": fundamentals_inputs_built_name()}) -%}
create or replace table {{ kept }} as
select issuer_entity_id, inputs_print
from {{ fingerprinted }}
where inputs_print is not null
{% endmacro %}
