-- Institutional investment managers (13F filers): one row per manager (its CIK as a number),
-- with its latest name, the quarters it reported, its filing count, and the dollar value of its
-- holdings at its last reported quarter (the current report: latest complete filing plus later
-- new-holdings amendments).

with filings as (
    select
        *,
        cast(manager_cik as bigint) as manager_id
    from {{ ref('stg_sec__form13f_filings') }}
),

current_filings as (
    select * from {{ ref('int_form13f_filings_current') }}
),

holdings as (
    select * from {{ ref('stg_sec__form13f_holdings') }}
),

manager_spans as (
    select
        manager_id,
        min(report_date) as first_report_date,
        max(report_date) as last_report_date,
        count(distinct accession) as filings
    from filings
    group by manager_id
),

latest_names as (
    select
        manager_id,
        manager_name,
        lpad(manager_cik, 10, '0') as cik
    from filings
    qualify row_number() over (
        partition by manager_id
        order by {{ filing_order('filed_date', 'accession', latest_first=true) }}
    ) = 1
),

latest_values as (
    select
        manager_spans.manager_id,
        sum(holdings.value_usd) as latest_value_usd
    from manager_spans
    inner join current_filings
        on manager_spans.manager_id = current_filings.manager_id
        and manager_spans.last_report_date = current_filings.report_date
    inner join holdings
        on current_filings.accession = holdings.accession
    group by manager_spans.manager_id
),

final as (
    select
        cast(manager_spans.manager_id as bigint) as manager_id,
        cast(latest_names.manager_name as varchar) as manager_name,
        cast(latest_names.cik as varchar) as cik,
        cast(manager_spans.first_report_date as date) as first_report_date,
        cast(manager_spans.last_report_date as date) as last_report_date,
        cast(manager_spans.filings as integer) as filings,
        cast(coalesce(latest_values.latest_value_usd, 0) as bigint) as latest_value_usd
    from manager_spans
    inner join latest_names
        on manager_spans.manager_id = latest_names.manager_id
    left join latest_values
        on manager_spans.manager_id = latest_values.manager_id
)

select * from final
