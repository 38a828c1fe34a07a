-- Each 13F filing's inputs, fingerprinted, and whether this build recomputes its rows in the
-- institutional_holdings mart (macros/incremental_by_prints.sql).
--
-- inputs_print: the prints (rows_print) of
--   - the headers of every filing of its manager for its quarter: a row's is_current depends on
--     which of them is the quarter's latest complete report (int_form13f_filings_current);
--   - its information-table rows;
--   - the security-master ticker periods its rows are labelled from: per CUSIP it holds, every
--     period of each security that ever had that CUSIP (a row's security is found by CUSIP, its
--     ticker among all of that security's periods), the columns the mart reads alone.
-- Null for a filing the mart holds that is not in landing any more.
--
-- is_rebuilt: every filing on a first or full build; otherwise those whose print differs from
-- the one the mart was last built from: a new filing and every other filing of its manager's
-- quarter (a restatement supersedes them), a changed or removed one, one holding a CUSIP whose
-- security's tickers changed. A sector move changes none. The mart reads these filings alone.

{{ config(materialized='table') }}

with filings as (
    select * from {{ ref('stg_sec__form13f_filings') }}
),

holdings as (
    select * from {{ ref('stg_sec__form13f_holdings') }}
),

ticker_periods as (
    select
        cusip,
        entity_id,
        valid_from,
        valid_to,
        ticker,
        ticker_kind
    from {{ ref('int_ticker_periods_classified') }}
    where entity_grain = 'security'
),

quarter_prints as (
    select
        cast(manager_cik as bigint) as manager_id,
        report_date,
        {{ rows_print('filings') }} as quarter_print
    from filings
    group by cast(manager_cik as bigint), report_date
),

holdings_prints as (
    select accession, {{ rows_print('holdings') }} as holdings_print
    from holdings
    group by accession
),

cusip_securities as (
    select distinct cusip, entity_id
    from ticker_periods
    where cusip is not null
),

cusip_prints as (
    select cusip_securities.cusip, {{ rows_print('ticker_periods') }} as cusip_print
    from cusip_securities
    inner join ticker_periods
        on cusip_securities.entity_id = ticker_periods.entity_id
    group by cusip_securities.cusip
),

filing_cusips as (
    select distinct holdings.accession, holdings.cusip, cusip_prints.cusip_print
    from holdings
    inner join cusip_prints
        on holdings.cusip = cusip_prints.cusip
),

securities_prints as (
    select accession, {{ rows_print('filing_cusips') }} as securities_print
    from filing_cusips
    group by accession
),

inputs as (
    select
        filings.accession,
        concat_ws(
            '|',
            quarter_prints.quarter_print,
            coalesce(holdings_prints.holdings_print, ''),
            coalesce(securities_prints.securities_print, '')
        ) as inputs_print
    from filings
    inner join quarter_prints
        on cast(filings.manager_cik as bigint) is not distinct from quarter_prints.manager_id
        and filings.report_date is not distinct from quarter_prints.report_date
    left join holdings_prints
        on filings.accession = holdings_prints.accession
    left join securities_prints
        on filings.accession = securities_prints.accession
)

{{ select_prints_marked_rebuilt('institutional_holdings', 'accession') }}
