-- Each CIK the security master maps to an issuer: one row per (cik, issuer_entity_id). The
-- fundamentals read an issuer's XBRL facts through it, and fingerprint them through it.

with security_master as (
    select * from {{ ref('int_security_master_unioned') }}
),

issuer_ciks as (
    select distinct
        cik,
        issuer_entity_id
    from security_master
    where cik is not null
        and issuer_entity_id is not null
)

select * from issuer_ciks
