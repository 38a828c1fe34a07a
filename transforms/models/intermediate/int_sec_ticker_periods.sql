-- Each ticker the SEC's company list gave a company, as periods [valid_from, valid_to]: a
-- period runs over consecutive snapshots that list the same CIK, ticker and venue. The SEC gives
-- no history, so a period starts on the day a snapshot first had it (never earlier: what came
-- before the first fetch is not known) and ends the day before the first snapshot without it
-- (null while the latest snapshot has it).

with company_tickers as (
    select * from {{ ref('stg_sec__company_tickers') }}
),

snapshots as (
    select
        seen_on,
        row_number() over (order by seen_on) as snapshot_number,
        lead(seen_on) over (order by seen_on) as next_seen_on
    from (select distinct seen_on from company_tickers)
),

listed as (
    select
        company_tickers.cik,
        company_tickers.ticker,
        company_tickers.exchange,
        company_tickers.company_name,
        snapshots.seen_on,
        snapshots.snapshot_number,
        snapshots.next_seen_on,
        -- equal along a run of consecutive snapshots of the same listing
        snapshots.snapshot_number - row_number() over (
            partition by company_tickers.cik, company_tickers.ticker, company_tickers.exchange
            order by snapshots.snapshot_number
        ) as run_id
    from company_tickers
    inner join snapshots
        on company_tickers.seen_on = snapshots.seen_on
),

periods as (
    select
        cik,
        ticker,
        exchange,
        min(seen_on) as valid_from,
        max(snapshot_number) as last_snapshot_number,
        arg_max(next_seen_on, snapshot_number) as next_seen_on,
        arg_max(company_name, snapshot_number) as company_name
    from listed
    group by cik, ticker, exchange, run_id
)

select
    cik,
    ticker,
    exchange,
    company_name,
    valid_from,
    cast(next_seen_on - interval 1 day as date) as valid_to
from periods
