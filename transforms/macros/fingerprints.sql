{#
    Fingerprints, in one place: how the dbt models print a group of rows, so that a later build
    can tell whether the group changed without keeping its rows. The fingerprint models of the
    incremental marts (int_*_fingerprinted, macros/incremental_by_prints.sql), the prices mart's
    input prints (int_price_inputs_fingerprinted) and int_fundamentals_trailing's per-issuer
    inputs all use it.
#}


{#- The print of a group of rows (an aggregate, as VARCHAR): their count, and the XOR and the
    sum of the 64-bit hashes of `row` (two changes that cancel in one do not in the other).
    `row` is an expression per row: a relation alias (the whole row), or a value such as a
    hash already tagged by kind. -#}
{% macro rows_print(row) -%}
concat_ws(':', count(*), bit_xor(hash({{ row }})), sum(hash({{ row }})::hugeint))
{%- endmacro %}
