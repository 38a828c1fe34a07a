-- Daily bars with an entity_id on every row. Rows that carry one (our layout) pass through;
-- rows that carry a ticker alone (the Quandl WIKI layout) are resolved on their date through
-- the security master: the one security the ticker names that day, or, when it names several,
-- the one whose own ticker it is. A ticker left ambiguous (two companies, or a shared class
-- ticker) stays unresolved and is not published. A bar given by both layouts keeps ours.

with prices as (
    select * from {{ ref('stg_market__prices') }}
),

security_ticker_periods as (
    select * from {{ ref('int_ticker_periods_classified') }}
    where entity_grain = 'security'
),

with_entity as (
    select
        entity_id,
        trade_date,
        ticker as source_ticker,
        open,
        high,
        low,
        close,
        volume,
        shares_outstanding,
        inline_dividend,
        inline_split_ratio
    from prices
    where entity_id is not null
),

ticker_only as (
    select * from prices
    where entity_id is null
),

candidates as (
    select
        ticker_only.*,
        security_ticker_periods.entity_id as candidate_entity_id,
        security_ticker_periods.ticker_kind,
        count(*) over (partition by ticker_only.ticker, ticker_only.trade_date) as candidates,
        count(*) filter (where security_ticker_periods.ticker_kind = 'own') over (
            partition by ticker_only.ticker, ticker_only.trade_date
        ) as own_candidates
    from ticker_only
    inner join security_ticker_periods
        on ticker_only.ticker = security_ticker_periods.ticker
        and ticker_only.trade_date >= security_ticker_periods.valid_from
        and ticker_only.trade_date <= coalesce(security_ticker_periods.valid_to, date '9999-12-31')
),

resolved_by_ticker as (
    select
        candidate_entity_id as entity_id,
        trade_date,
        ticker as source_ticker,
        open,
        high,
        low,
        close,
        volume,
        shares_outstanding,
        inline_dividend,
        inline_split_ratio
    from candidates
    where candidates = 1
        or (own_candidates = 1 and ticker_kind = 'own')
    -- two publisher tickers resolving to one security on one date: keep its own ticker's bar
    qualify row_number() over (
        partition by candidate_entity_id, trade_date
        order by (ticker_kind = 'own') desc, ticker
    ) = 1
),

unioned as (
    select * from with_entity
    union all
    select * from resolved_by_ticker
    where not exists (
        select 1
        from with_entity
        where with_entity.entity_id = resolved_by_ticker.entity_id
            and with_entity.trade_date = resolved_by_ticker.trade_date
    )
)

select * from unioned
