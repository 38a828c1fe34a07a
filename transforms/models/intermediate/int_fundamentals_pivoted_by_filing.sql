-- One row per filing and period it reports (its own period and every comparative period), with
-- the figures that filing reported for that period as columns. A period is a quarterly or annual
-- duration the filing reports; balance-sheet instants join the periods of the same filing that
-- end that day, and the cover-page shares outstanding joins the filing's own (latest) period.
-- fiscal_year / fiscal_period name the period itself: the filing's own fy / fp, stepped back by
-- whole years (annual) or quarters (quarterly) for comparatives (fiscal_period_labels,
-- macros/fiscal_periods.sql).

{%- set duration_items = [
    'revenue', 'cost_of_revenue', 'gross_profit', 'operating_income', 'net_income',
    'operating_cash_flow', 'eps_basic', 'eps_diluted', 'shares_weighted_basic'
] %}
{%- set instant_items = ['total_assets', 'total_liabilities', 'stockholders_equity', 'cash'] %}

with facts as (
    select * from {{ ref('int_fundamental_facts_mapped') }}
),

filings as (
    select
        accession,
        issuer_entity_id,
        min(filed_date) as known_from,
        min(form) as form,
        max(fiscal_year) as filing_fiscal_year,
        max(fiscal_period) as filing_fiscal_period
    from facts
    group by accession, issuer_entity_id
),

periods as (
    select
        accession,
        period_kind as period_type,
        period_end,
        min(period_start) as period_start
    from facts
    where period_kind in ('annual', 'quarterly')
    group by accession, period_kind, period_end
),

own_periods as (
    select
        accession,
        max(period_end) as own_period_end
    from periods
    group by accession
),

duration_values as (
    select
        periods.accession,
        periods.period_type,
        periods.period_end,
        facts.item,
        facts.value
    from periods
    inner join facts
        on periods.accession = facts.accession
        and periods.period_type = facts.period_kind
        and periods.period_end = facts.period_end
),

instant_values as (
    select
        periods.accession,
        periods.period_type,
        periods.period_end,
        facts.item,
        facts.value
    from periods
    inner join facts
        on periods.accession = facts.accession
        and periods.period_end = facts.period_end
    where facts.period_kind = 'instant'
),

cover_values as (
    select
        periods.accession,
        periods.period_type,
        periods.period_end,
        facts.item,
        facts.value
    from periods
    inner join own_periods
        on periods.accession = own_periods.accession
        and periods.period_end = own_periods.own_period_end
    inner join facts
        on periods.accession = facts.accession
    where facts.period_kind = 'cover'
),

period_values as (
    select * from duration_values
    union all
    select * from instant_values
    union all
    select * from cover_values
),

pivoted as (
    select
        accession,
        period_type,
        period_end,
        {%- for item in duration_items + instant_items + ['shares_outstanding'] %}
        max(value) filter (where item = '{{ item }}') as {{ item }}{{ "," if not loop.last }}
        {%- endfor %}
    from period_values
    group by accession, period_type, period_end
),

placed as (
    select
        filings.issuer_entity_id,
        periods.period_end,
        periods.period_type,
        periods.accession,
        filings.known_from,
        filings.form,
        periods.period_start,
        periods.period_end = own_periods.own_period_end as is_own_period,
        filings.filing_fiscal_year,
        filings.filing_fiscal_period,
        own_periods.own_period_end
    from periods
    inner join filings
        on periods.accession = filings.accession
    inner join own_periods
        on periods.accession = own_periods.accession
)

select
    placed.issuer_entity_id,
    placed.period_end,
    placed.period_type,
    placed.accession,
    placed.known_from,
    placed.form,
    {{ fiscal_period_labels(
        'placed.period_type',
        'placed.filing_fiscal_year',
        'placed.filing_fiscal_period',
        'placed.period_end',
        'placed.own_period_end'
    ) }},
    placed.period_start,
    placed.is_own_period,
    {%- for item in duration_items + instant_items + ['shares_outstanding'] %}
    pivoted.{{ item }}{{ "," if not loop.last }}
    {%- endfor %}
from placed
left join pivoted
    on placed.accession = pivoted.accession
    and placed.period_type = pivoted.period_type
    and placed.period_end = pivoted.period_end
