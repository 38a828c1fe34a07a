-- One row per filing and period it reports (its own period and every comparative period), with
-- the figures that filing reported for that period as columns. A period is a quarterly or annual
-- duration the filing reports; balance-sheet instants join the periods of the same filing that
-- end that day, and the cover-page shares outstanding joins the filing's own (latest) period.
-- fiscal_year / fiscal_period name the period itself: the filing's own fy / fp, stepped back by
-- whole years (annual) or quarters (quarterly) for comparatives.

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
        case filings.filing_fiscal_period
            when 'Q1' then 1
            when 'Q2' then 2
            when 'Q3' then 3
            when 'Q4' then 4
            when 'FY' then 4
        end as filing_quarter,
        datediff('day', periods.period_end, own_periods.own_period_end) as days_before_own_end
    from periods
    inner join filings
        on periods.accession = filings.accession
    inner join own_periods
        on periods.accession = own_periods.accession
),

fiscal as (
    select
        *,
        -- quarters since year 0 of the period, counted from 0 (quarterly periods)
        filing_fiscal_year * 4 + filing_quarter - 1
        - cast(round(days_before_own_end / 91.31) as integer) as fiscal_quarter_index
    from placed
)

select
    fiscal.issuer_entity_id,
    fiscal.period_end,
    fiscal.period_type,
    fiscal.accession,
    fiscal.known_from,
    fiscal.form,
    case
        when fiscal.period_type = 'annual'
            then fiscal.filing_fiscal_year - cast(round(fiscal.days_before_own_end / 365.25) as integer)
        else cast(floor(fiscal.fiscal_quarter_index / 4) as integer)
    end as fiscal_year,
    case
        when fiscal.period_type = 'annual' then 'FY'
        when fiscal.fiscal_quarter_index is not null
            then 'Q' || cast(fiscal.fiscal_quarter_index % 4 + 1 as varchar)
    end as fiscal_period,
    fiscal.period_start,
    fiscal.is_own_period,
    {%- for item in duration_items + instant_items + ['shares_outstanding'] %}
    pivoted.{{ item }}{{ "," if not loop.last }}
    {%- endfor %}
from fiscal
left join pivoted
    on fiscal.accession = pivoted.accession
    and fiscal.period_type = pivoted.period_type
    and fiscal.period_end = pivoted.period_end
