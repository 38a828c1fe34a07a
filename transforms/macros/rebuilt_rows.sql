{#
    What an incremental mart's build recomputes, kept for the contract check and the publish
    step (findata/published/rebuilt_rows.py): `<mart>__rebuilt`, beside the mart, written by its
    pre-hook in the mart's transaction (the table and the mart's rows change together).

    Its columns name the mart's: a column `c` holds the values of `c` whose rows were deleted
    and appended again; a column `c__from` the first value of `c` rebuilt (prices: per
    security, the first date). Every other row of the mart is as the build before left it.
    A first or full build drops the table: then nothing tells which rows changed.
#}

{#- The relation of the mart's `<mart>__rebuilt` table. -#}
{% macro rebuilt_rows_relation() %}
{{- return(this.incorporate(path={"identifier": this.identifier ~ '__rebuilt'})) -}}
{% endmacro %}


{#- In a mart's pre-hook: `<mart>__rebuilt` as `select_rebuilt` (SQL) on an incremental
    build; dropped on a first or full one. -#}
{% macro keep_rebuilt_rows(select_rebuilt) %}
drop table if exists {{ rebuilt_rows_relation() }};
{% if is_incremental() %}
create table {{ rebuilt_rows_relation() }} as {{ select_rebuilt }};
{% endif %}
{% endmacro %}
