-- Point-in-time fundamentals: one row per issuer, period and filing that reported the period
-- (its own period or a comparative). known_from is the filing date; superseded_on the filing
-- date of the next filing reporting the same period. A figure the filing did not report for the
-- period keeps the value known before it (the latest earlier row of the period), so each row is
-- the period as known from known_from; is_restatement marks a filing that changed a figure
-- already known for the period.
--
-- Incremental by issuer: a build recomputes the issuers int_fundamentals_issuers_fingerprinted
-- marks is_rebuilt (those whose filings, or CIKs, changed; all of them on a first or full
-- build), whose rows are the only ones the facts views carry; the pre-hook deletes their rows
-- first (macros/incremental_by_prints.sql). Every window below is per issuer.
--
-- depends_on: {{ ref('int_fundamentals_issuers_fingerprinted') }}

{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='fail',
    pre_hook="{{ delete_rebuilt_keys('int_fundamentals_issuers_fingerprinted', 'issuer_entity_id') }}",
    post_hook="{{ keep_inputs_built('int_fundamentals_issuers_fingerprinted', 'issuer_entity_id') }}",
) }}

{%- set items = [
    'revenue', 'cost_of_revenue', 'gross_profit', 'operating_income', 'net_income',
    'operating_cash_flow', 'total_assets', 'total_liabilities', 'stockholders_equity', 'cash',
    'eps_basic', 'eps_diluted', 'shares_weighted_basic', 'shares_outstanding'
] %}

with filing_periods as (
    select * from {{ ref('int_fundamentals_pivoted_by_filing') }}
),

with_prior as (
    select
        *,
        {%- for item in items %}
        last_value({{ item }} ignore nulls) over (
            partition by issuer_entity_id, period_end, period_type
            order by {{ filing_order('known_from', 'accession') }}
            rows between unbounded preceding and 1 preceding
        ) as prior_{{ item }},
        {%- endfor %}
        lead(known_from) over (
            partition by issuer_entity_id, period_end, period_type
            order by {{ filing_order('known_from', 'accession') }}
        ) as superseded_on
    from filing_periods
),

final as (
    select
        cast(issuer_entity_id as bigint) as issuer_entity_id,
        cast(period_end as date) as period_end,
        cast(period_type as varchar) as period_type,
        cast(accession as varchar) as accession,
        cast(known_from as date) as known_from,
        cast(form as varchar) as form,
        cast(fiscal_year as integer) as fiscal_year,
        cast(fiscal_period as varchar) as fiscal_period,
        cast(period_start as date) as period_start,
        {%- for item in items %}
        cast(coalesce({{ item }}, prior_{{ item }}) as double) as {{ item }},
        {%- endfor %}
        cast(
            {%- for item in items %}
            ({{ item }} is not null and prior_{{ item }} is not null
                and abs({{ item }} - prior_{{ item }})
                > 1e-9 * greatest(abs({{ item }}), abs(prior_{{ item }})))
            {{- " or" if not loop.last }}
            {%- endfor %}
            as boolean
        ) as is_restatement,
        cast(superseded_on as date) as superseded_on
    from with_prior
)

select * from final
