-- Securities and issuers, one row per entity_id, with their current attributes: a security's
-- from its latest security-master row, an issuer's from its own issuer-grain row when it has one,
-- else from its latest security row. Every issuer named by the security master gets a row.

with ticker_periods as (
    select * from {{ ref('int_ticker_periods_classified') }}
),

own_ticker_periods as (
    select * from {{ ref('int_security_own_ticker_periods') }}
),

latest_security_rows as (
    select *
    from ticker_periods
    where entity_grain = 'security'
    qualify row_number() over (
        partition by entity_id
        order by valid_from desc, (ticker_kind = 'own') desc, ticker
    ) = 1
),

latest_issuer_rows as (
    -- an issuer's own row ranks first; otherwise its most recently valid security row
    select *
    from ticker_periods
    qualify row_number() over (
        partition by issuer_entity_id
        order by (entity_grain = 'issuer') desc, valid_from desc, entity_id, ticker
    ) = 1
),

security_tickers as (
    select
        entity_id,
        ticker
    from own_ticker_periods
    qualify row_number() over (partition by entity_id order by valid_from desc, ticker) = 1
),

issuer_tickers as (
    -- the ticker naming the issuer itself, else a ticker shared by its share classes
    select
        issuer_entity_id as entity_id,
        ticker
    from ticker_periods
    where entity_grain = 'issuer'
        or ticker_kind = 'shared_class'
    qualify row_number() over (
        partition by issuer_entity_id
        order by (entity_grain = 'issuer') desc, valid_from desc, ticker
    ) = 1
),

securities as (
    select
        latest_security_rows.entity_id,
        'security' as entity_grain,
        latest_security_rows.issuer_entity_id,
        coalesce(security_tickers.ticker, latest_security_rows.ticker) as ticker,
        latest_security_rows.issuer_name as name,
        latest_security_rows.country,
        latest_security_rows.cik,
        latest_security_rows.figi,
        latest_security_rows.cusip,
        latest_security_rows.share_class,
        latest_security_rows.instrument_type,
        latest_security_rows.exchange,
        latest_security_rows.naics_code,
        latest_security_rows.gics_sector,
        latest_security_rows.gics_group,
        latest_security_rows.valid_from as master_row_valid_from
    from latest_security_rows
    left join security_tickers
        on latest_security_rows.entity_id = security_tickers.entity_id
),

issuers as (
    select
        latest_issuer_rows.issuer_entity_id as entity_id,
        'issuer' as entity_grain,
        latest_issuer_rows.issuer_entity_id,
        issuer_tickers.ticker,
        latest_issuer_rows.issuer_name as name,
        latest_issuer_rows.country,
        latest_issuer_rows.cik,
        cast(null as varchar) as figi,
        cast(null as varchar) as cusip,
        cast(null as varchar) as share_class,
        cast(null as varchar) as instrument_type,
        cast(null as varchar) as exchange,
        latest_issuer_rows.naics_code,
        latest_issuer_rows.gics_sector,
        latest_issuer_rows.gics_group,
        latest_issuer_rows.valid_from as master_row_valid_from
    from latest_issuer_rows
    left join issuer_tickers
        on latest_issuer_rows.issuer_entity_id = issuer_tickers.entity_id
),

unioned as (
    select * from securities
    union all
    select * from issuers
)

select * from unioned
