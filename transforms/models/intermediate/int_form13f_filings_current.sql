-- The 13F filings that make up each manager's current report for a quarter: the latest complete
-- report (the original 13F-HR or a later amendment restating it) plus the "new holdings"
-- amendments filed after it. A manager's holdings at a quarter end are the rows of these filings.

with filings as (
    select
        *,
        cast(manager_cik as bigint) as manager_id,
        is_amendment and upper(coalesce(cast(amendment_type as varchar), '')) like 'NEW HOLDINGS%'
            as adds_holdings
    from {{ ref('stg_sec__form13f_filings') }}
),

complete_reports as (
    select * from filings
    where not adds_holdings
    qualify row_number() over (
        partition by manager_id, report_date
        order by {{ filing_order('filed_date', 'accession', latest_first=true) }}
    ) = 1
),

additions as (
    select filings.*
    from filings
    inner join complete_reports
        on filings.manager_id = complete_reports.manager_id
        and filings.report_date = complete_reports.report_date
        and filings.filed_date >= complete_reports.filed_date
    where filings.adds_holdings
)

select
    manager_id,
    report_date,
    accession,
    filed_date
from complete_reports
union all
select
    manager_id,
    report_date,
    accession,
    filed_date
from additions
