with source as (
    select * from {{ source('market', 'security_master') }}
),

renamed as (
    select
        entity_id,
        entity_grain,
        issuer_entity_id,
        issuer_name,
        lpad(cik, 10, '0') as cik,
        figi,
        cusip,
        ticker,
        exchange,
        share_class,
        instrument_type,
        country,
        cast(valid_from as date) as valid_from,
        cast(valid_to as date) as valid_to,
        gics_sector,
        gics_group,
        naics_code
    from source
)

select * from renamed
