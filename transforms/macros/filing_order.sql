{#
    Which filing is the latest, in one place: the order in which the filings about one subject
    (an issuer's period, a manager's quarter, a manager) became known. A later filing date comes
    later; on one day, the higher accession number (a fixed choice, so that every build picks
    the same filing). With `latest_first` the latest filing comes first (`row_number() = 1`
    picks it); a `preferred_accession` (a row's own filing, when it reads the figures of other
    filings) then wins a tie on the date before the accession number decides.
#}
{% macro filing_order(filed_date, accession, latest_first=false, preferred_accession=none) -%}
{%- if latest_first -%}
{{ filed_date }} desc,
{%- if preferred_accession is not none %} ({{ accession }} = {{ preferred_accession }}) desc,{% endif %} {{ accession }} desc
{%- else -%}
{%- if preferred_accession is not none -%}
{{ exceptions.raise_compiler_error("filing_order: preferred_accession needs latest_first") }}
{%- endif -%}
{{ filed_date }}, {{ accession }}
{%- endif -%}
{%- endmacro %}
