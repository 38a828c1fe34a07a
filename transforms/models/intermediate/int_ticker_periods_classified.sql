-- Every ticker period of the security master, marked `own` (the entity's own ticker: a
-- security's class or sole ticker, an issuer's ticker) or `shared_class` (a ticker that names
-- several share classes of one issuer over overlapping periods, e.g. LCU for LCU-A and LCU-B).

with security_master as (
    select * from {{ ref('int_security_master_unioned') }}
),

shared_class_periods as (
    select distinct
        a.entity_id,
        a.ticker,
        a.valid_from
    from security_master as a
    inner join security_master as b
        on a.ticker = b.ticker
        and a.issuer_entity_id = b.issuer_entity_id
        and a.entity_id <> b.entity_id
        and a.valid_from <= coalesce(b.valid_to, date '9999-12-31')
        and b.valid_from <= coalesce(a.valid_to, date '9999-12-31')
    where a.entity_grain = 'security'
        and b.entity_grain = 'security'
),

classified as (
    select
        security_master.ticker,
        security_master.entity_id,
        security_master.valid_from,
        security_master.valid_to,
        security_master.entity_grain,
        security_master.issuer_entity_id,
        security_master.issuer_name,
        security_master.cik,
        security_master.figi,
        security_master.cusip,
        security_master.exchange,
        security_master.share_class,
        security_master.instrument_type,
        security_master.country,
        security_master.gics_sector,
        security_master.gics_group,
        security_master.naics_code,
        case
            when shared_class_periods.entity_id is null then 'own' else 'shared_class'
        end as ticker_kind
    from security_master
    left join shared_class_periods
        on security_master.entity_id = shared_class_periods.entity_id
        and security_master.ticker = shared_class_periods.ticker
        and security_master.valid_from = shared_class_periods.valid_from
)

select * from classified
