-- One row per entity: every security and every issuer of the security master, with identifiers,
-- current name, classifications and listing dates (the resolve response's entity).

with entities as (
    select * from {{ ref('int_entities_unioned') }}
),

classifications as (
    select * from {{ ref('int_entity_classifications') }}
),

listing_dates as (
    select * from {{ ref('int_entity_listing_dates') }}
),

final as (
    select
        cast(entities.entity_id as bigint) as entity_id,
        cast(entities.entity_grain as varchar) as entity_grain,
        cast(entities.issuer_entity_id as bigint) as issuer_entity_id,
        cast(entities.ticker as varchar) as ticker,
        cast(entities.name as varchar) as name,
        cast('corporation' as varchar) as entity_type,
        cast(entities.country as varchar) as country,
        cast(entities.cik as varchar) as cik,
        cast(entities.figi as varchar) as figi,
        cast(entities.cusip as varchar) as cusip,
        cast(entities.share_class as varchar) as share_class,
        cast(entities.instrument_type as varchar) as instrument_type,
        cast(entities.exchange as varchar) as exchange,
        cast(classifications.sic_code as varchar) as sic_code,
        cast(classifications.sic_description as varchar) as sic_description,
        cast(classifications.naics_code as varchar) as naics_code,
        cast(classifications.gics_sector as varchar) as gics_sector,
        cast(classifications.gics_group as varchar) as gics_group,
        cast(classifications.classification_as_of as date) as classification_as_of,
        cast(listing_dates.listed_from as date) as listed_from,
        cast(listing_dates.listed_to as date) as listed_to,
        cast(listing_dates.first_price_date as date) as first_price_date,
        cast(listing_dates.last_price_date as date) as last_price_date
    from entities
    left join classifications
        on entities.entity_id = classifications.entity_id
    left join listing_dates
        on entities.entity_id = listing_dates.entity_id
)

select * from final
order by entity_id
