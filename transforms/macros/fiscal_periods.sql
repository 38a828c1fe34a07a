{#
    Fiscal periods, in one place: what a quarter and a year are in days, how a reported duration
    becomes a period type, and how a period is labelled with its fiscal year and quarter. The
    facts (int_fundamental_facts_mapped), the fundamentals' labels
    (int_fundamentals_pivoted_by_filing) and the trailing figures (int_fundamentals_trailing)
    read them here.
#}


{#- `annual`, `quarterly` or null: the type of a reported duration, by its length in days
    (a fiscal quarter runs 80 to 100 days, a fiscal year 350 to 380: 52/53-week years and
    13/14-week quarters included). -#}
{% macro period_type_of(period_start, period_end) -%}
case
    when datediff('day', {{ period_start }}, {{ period_end }}) between 80 and 100
        then 'quarterly'
    when datediff('day', {{ period_start }}, {{ period_end }}) between 350 and 380
        then 'annual'
end
{%- endmacro %}


{#- The whole number of fiscal quarters from `earlier` to `later` (two period ends; 91.31 days
    a quarter, so 52/53-week calendars round to the right count). -#}
{% macro quarters_between(earlier, later) -%}
cast(round(datediff('day', {{ earlier }}, {{ later }}) / 91.31) as integer)
{%- endmacro %}


{#- The whole number of fiscal years from `earlier` to `later` (two period ends). -#}
{% macro years_between(earlier, later) -%}
cast(round(datediff('day', {{ earlier }}, {{ later }}) / 365.25) as integer)
{%- endmacro %}


{#- `earlier` (a period end) ends the same fiscal period a year before `later`: 355 to 375
    days before it. -#}
{% macro a_year_before(earlier, later) -%}
{{ earlier }} between {{ later }} - 375 and {{ later }} - 355
{%- endmacro %}


{#- `earlier` (a period end, on or before `later`) falls in the twelve months ending at
    `later`: less than 355 days before it, so a period a year earlier does not. -#}
{% macro within_a_year_before(earlier, later) -%}
{{ earlier }} > {{ later }} - 355
{%- endmacro %}


{#- The select items `fiscal_year` and `fiscal_period` of a period a filing reports (its own
    period or a comparative): the filing's own fiscal year and period (`fy`, `fp`: Q1…Q4 or FY),
    stepped back from the filing's own period end by whole years (annual periods, labelled FY)
    or whole quarters (quarterly ones, labelled Q1…Q4; a filing whose fp is none of those
    leaves them null). -#}
{% macro fiscal_period_labels(period_type, filing_fiscal_year, filing_fiscal_period, period_end, own_period_end) -%}
{%- set quarter_index -%}
    ({{ filing_fiscal_year }} * 4
        + case {{ filing_fiscal_period }}
            when 'Q1' then 1
            when 'Q2' then 2
            when 'Q3' then 3
            when 'Q4' then 4
            when 'FY' then 4
        end
        - 1
        - {{ quarters_between(period_end, own_period_end) }})
{%- endset -%}
case
    when {{ period_type }} = 'annual'
        then {{ filing_fiscal_year }} - {{ years_between(period_end, own_period_end) }}
    else cast(floor({{ quarter_index }} / 4) as integer)
end as fiscal_year,
case
    when {{ period_type }} = 'annual' then 'FY'
    when {{ quarter_index }} is not null
        then 'Q' || cast({{ quarter_index }} % 4 + 1 as varchar)
end as fiscal_period
{%- endmacro %}
