-- A security's own ticker over time, as non-overlapping periods [valid_from, period_to]: where
-- two own tickers of one security overlap, the later one takes over from its first day. Used to
-- label a security's rows (prices, index events) with the ticker it traded under on a date.

with ticker_periods as (
    select * from {{ ref('int_ticker_periods_classified') }}
    where entity_grain = 'security'
        and ticker_kind = 'own'
),

bounded as (
    select
        entity_id,
        ticker,
        exchange,
        valid_from,
        valid_to,
        least(
            coalesce(valid_to, date '9999-12-31'),
            coalesce(
                lead(valid_from) over (partition by entity_id order by valid_from, ticker) - 1,
                date '9999-12-31'
            )
        ) as period_to
    from ticker_periods
)

select * from bounded
where period_to >= valid_from
