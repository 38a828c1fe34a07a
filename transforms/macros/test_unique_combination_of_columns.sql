{#- A combination of columns is unique (dbt_utils' unique_combination_of_columns, without the
    package: dbt deps would need the network at build time). -#}
{% test unique_combination_of_columns(model, columns) %}
select {{ columns | join(', ') }}, count(*) as occurrences
from {{ model }}
group by {{ columns | join(', ') }}
having count(*) > 1
{% endtest %}
