-- 13F-HR information tables: one row per table row (accession, line_number), with the filing's
-- manager, quarter end (report_date) and filing date. The security is found by CUSIP in the
-- security master (null when the CUSIP is not there) and labelled with the ticker it had on the
-- report date. value_usd is in dollars whatever unit the filing used (thousands before
-- 2023-01-03). is_current marks the rows of the manager's current report for the quarter (the
-- latest complete report, original or restatement, plus later new-holdings amendments); rows
-- of a report a restatement replaced are kept, as filed, with is_current false. Each row also
-- carries its filing's cover total against the sum of the filing's rows (the reader's
-- reconcile_cover_total: difference in dollars and relative, and equal/rounding/mismatch).
--
-- Incremental by filing: a build recomputes the rows of the filings
-- int_form13f_filings_fingerprinted marks is_rebuilt (new, changed or removed filings and the
-- other filings of their manager's quarter, filings holding a CUSIP whose security's tickers
-- changed; every filing on a first or full build); the pre-hook deletes their rows first
-- (macros/incremental_by_prints.sql). Every row is made from its own filing's rows, its
-- manager's filings of the quarter and the ticker periods of the securities its CUSIP names.

{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='fail',
    pre_hook="{{ delete_rebuilt_keys('int_form13f_filings_fingerprinted', 'accession') }}",
    post_hook="{{ keep_inputs_built('int_form13f_filings_fingerprinted', 'accession') }}",
) }}

with filings_to_build as (
    select accession
    from {{ ref('int_form13f_filings_fingerprinted') }}
    where is_rebuilt
),

holdings as (
    select * from {{ ref('stg_sec__form13f_holdings') }}
    where accession in (select filings_to_build.accession from filings_to_build)
),

filings as (
    select * from {{ ref('stg_sec__form13f_filings') }}
),

current_filings as (
    select * from {{ ref('int_form13f_filings_current') }}
),

ticker_periods as (
    select * from {{ ref('int_ticker_periods_classified') }}
    where entity_grain = 'security'
),

positions as (
    select
        holdings.*,
        cast(filings.manager_cik as bigint) as manager_id,
        filings.report_date,
        filings.filed_date as filing_date,
        filings.is_amendment,
        case when filings.is_amendment then upper(filings.amendment_type) end as amendment_type,
        current_filings.accession is not null as is_current,
        filings.cover_value_difference_usd,
        filings.cover_value_difference_ratio,
        filings.cover_total_status
    from holdings
    inner join filings
        on holdings.accession = filings.accession
    left join current_filings
        on holdings.accession = current_filings.accession
),

securities as (
    select
        positions.accession,
        positions.line_number,
        ticker_periods.entity_id
    from positions
    inner join ticker_periods
        on positions.cusip = ticker_periods.cusip
    qualify row_number() over (
        partition by positions.accession, positions.line_number
        order by
            (positions.report_date >= ticker_periods.valid_from
                and positions.report_date <= coalesce(ticker_periods.valid_to, date '9999-12-31'))
            desc,
            (ticker_periods.valid_from <= positions.report_date) desc,
            ticker_periods.valid_from desc,
            ticker_periods.entity_id
    ) = 1
),

tickers as (
    select
        positions.accession,
        positions.line_number,
        ticker_periods.ticker
    from positions
    inner join securities
        on positions.accession = securities.accession
        and positions.line_number = securities.line_number
    inner join ticker_periods
        on securities.entity_id = ticker_periods.entity_id
        and ticker_periods.valid_from <= positions.report_date
    qualify row_number() over (
        partition by positions.accession, positions.line_number
        order by
            (positions.report_date <= coalesce(ticker_periods.valid_to, date '9999-12-31')) desc,
            -- a security's own (class) ticker before one it shares with another class
            ticker_periods.ticker_kind = 'shared_class',
            ticker_periods.valid_from desc,
            ticker_periods.ticker
    ) = 1
),

final as (
    select
        cast(positions.accession as varchar) as accession,
        cast(positions.line_number as integer) as line_number,
        cast(positions.manager_id as bigint) as manager_id,
        cast(positions.report_date as date) as report_date,
        cast(positions.filing_date as date) as filing_date,
        cast(securities.entity_id as bigint) as entity_id,
        cast(tickers.ticker as varchar) as ticker,
        cast(positions.cusip as varchar) as cusip,
        cast(positions.name_of_issuer as varchar) as name_of_issuer,
        cast(positions.title_of_class as varchar) as title_of_class,
        cast(positions.shares as bigint) as shares,
        cast(positions.shares_or_principal as varchar) as shares_or_principal,
        cast(positions.put_call as varchar) as put_call,
        cast(positions.value_usd as bigint) as value_usd,
        cast(positions.investment_discretion as varchar) as investment_discretion,
        cast(positions.voting_sole as bigint) as voting_sole,
        cast(positions.voting_shared as bigint) as voting_shared,
        cast(positions.voting_none as bigint) as voting_none,
        cast(positions.is_amendment as boolean) as is_amendment,
        cast(positions.amendment_type as varchar) as amendment_type,
        cast(positions.is_current as boolean) as is_current,
        cast(positions.cover_value_difference_usd as bigint) as cover_value_difference_usd,
        cast(positions.cover_value_difference_ratio as double) as cover_value_difference_ratio,
        cast(positions.cover_total_status as varchar) as cover_total_status
    from positions
    left join securities
        on positions.accession = securities.accession
        and positions.line_number = securities.line_number
    left join tickers
        on positions.accession = tickers.accession
        and positions.line_number = tickers.line_number
)

select * from final
