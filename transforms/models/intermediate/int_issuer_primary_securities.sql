-- Each issuer's primary security: its first listed class (earliest listing, then share class,
-- then entity_id). Metrics take the issuer's price from it.

with security_master as (
    select * from {{ ref('int_security_master_unioned') }}
    where entity_grain = 'security'
),

primary_security as (
    select
        issuer_entity_id,
        entity_id as security_entity_id
    from security_master
    qualify row_number() over (
        partition by issuer_entity_id
        order by valid_from, share_class nulls first, entity_id
    ) = 1
)

select * from primary_security
