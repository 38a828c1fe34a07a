-- Industry classifications of every entity: SIC from the issuer's SEC submissions (by CIK),
-- NAICS and GICS from the security master. `classification_as_of` is the date they are known
-- as of: the later of the issuer's latest SEC filing and the start of its security-master row.

with entities as (
    select * from {{ ref('int_entities_unioned') }}
),

companies as (
    select * from {{ ref('stg_sec__companies') }}
),

latest_filings as (
    select
        cik,
        max(filing_date) as latest_filing_date
    from {{ ref('stg_sec__filings') }}
    group by cik
),

classified as (
    select
        entities.entity_id,
        companies.sic_code,
        companies.sic_description,
        entities.naics_code,
        entities.gics_sector,
        entities.gics_group,
        greatest(latest_filings.latest_filing_date, entities.master_row_valid_from)
            as classification_as_of
    from entities
    left join companies
        on entities.cik = companies.cik
    left join latest_filings
        on entities.cik = latest_filings.cik
)

select * from classified
