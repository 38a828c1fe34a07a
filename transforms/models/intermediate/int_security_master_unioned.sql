-- The security master: the vendor's rows, and for each company the vendor does not cover (by
-- CIK) rows made from the SEC's company list. An SEC company becomes an issuer and each ticker
-- it was listed under a security of it, valid from the day findata first saw it listed
-- (int_sec_ticker_periods). The SEC says nothing of share classes, FIGIs, CUSIPs or countries,
-- so those stay null; it does not say that a new ticker of a company renames an old one, so each
-- ticker is a security of its own.
--
-- Ids of SEC-made entities cannot collide with each other and keep away from the vendor's:
-- an issuer is 7,000,000,000,000 + CIK; a security 10,000,000,000,000 + CIK * 1,000 + n, n
-- numbering the company's tickers in the order they were first seen (then by ticker), so an
-- id never changes once given while the snapshots it came from stay in landing.

with vendor as (
    select * from {{ ref('stg_market__security_master') }}
),

sec_periods as (
    select * from {{ ref('int_sec_ticker_periods') }}
    where cik not in (select vendor.cik from vendor where vendor.cik is not null)
),

sec_tickers as (
    select
        cik,
        ticker,
        row_number() over (partition by cik order by min(valid_from), ticker) as ticker_number
    from sec_periods
    group by cik, ticker
),

sec_rows as (
    select
        10000000000000 + cast(sec_periods.cik as bigint) * 1000 + sec_tickers.ticker_number
            as entity_id,
        'security' as entity_grain,
        7000000000000 + cast(sec_periods.cik as bigint) as issuer_entity_id,
        sec_periods.company_name as issuer_name,
        sec_periods.cik,
        cast(null as varchar) as figi,
        cast(null as varchar) as cusip,
        sec_periods.ticker,
        sec_periods.exchange,
        cast(null as varchar) as share_class,
        cast(null as varchar) as instrument_type,
        cast(null as varchar) as country,
        sec_periods.valid_from,
        sec_periods.valid_to,
        cast(null as varchar) as gics_sector,
        cast(null as varchar) as gics_group,
        cast(null as varchar) as naics_code
    from sec_periods
    inner join sec_tickers
        on sec_periods.cik = sec_tickers.cik
        and sec_periods.ticker = sec_tickers.ticker
),

unioned as (
    select * from vendor
    union all by name
    select * from sec_rows
)

select * from unioned
