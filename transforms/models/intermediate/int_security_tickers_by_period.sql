-- The ticker periods of each listed security, ranked for labelling the security on a date:
-- a ticker that names only this security (its class ticker) ranks before one it shares with
-- another class of the same issuer (e.g. LCU for LCU-A and LCU-B), then the latest listing.

with security_master as (
    select * from {{ ref('stg_market__security_master') }}
    where entity_grain = 'security'
),

flagged as (
    select
        security_master.entity_id,
        security_master.cusip,
        security_master.ticker,
        security_master.valid_from,
        security_master.valid_to,
        exists (
            select 1
            from security_master as other
            where other.ticker = security_master.ticker
                and other.entity_id <> security_master.entity_id
                and other.valid_from <= coalesce(security_master.valid_to, date '9999-12-31')
                and security_master.valid_from <= coalesce(other.valid_to, date '9999-12-31')
        ) as is_shared_ticker
    from security_master
)

select * from flagged
