{#- Schemas are named exactly as configured (staging, intermediate, marts), not prefixed with
    the target schema, so the publish step finds the marts in `marts`. -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {{ custom_schema_name if custom_schema_name else target.schema }}
{%- endmacro %}
