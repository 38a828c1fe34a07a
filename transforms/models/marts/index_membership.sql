-- Index membership intervals: a security is a member of an index from added_date (inclusive)
-- until removed_date (the first day it is no longer a member; null while a member). A roster
-- as of a date is every row with added_date <= date < coalesce(removed_date, infinity).

with membership as (
    select * from {{ ref('int_index_membership_resolved') }}
),

index_codes as (
    select * from {{ ref('int_index_codes') }}
),

entities as (
    select * from {{ ref('int_entities_unioned') }}
),

final as (
    select
        cast(membership.membership_id as varchar) as membership_id,
        cast(membership.index_code as varchar) as index_code,
        cast(coalesce(index_codes.index_name, upper(membership.index_code)) as varchar)
            as index_name,
        cast(membership.entity_id as bigint) as entity_id,
        cast(membership.ticker_at_added as varchar) as ticker,
        cast(entities.name as varchar) as entity_name,
        cast(membership.added_date as date) as added_date,
        cast(membership.removed_date as date) as removed_date,
        cast(coalesce(entities.entity_grain, 'security') as varchar) as member_grain
    from membership
    left join index_codes
        on membership.index_code = index_codes.index_code
    left join entities
        on membership.entity_id = entities.entity_id
)

select * from final
order by index_code, added_date, entity_id, membership_id
