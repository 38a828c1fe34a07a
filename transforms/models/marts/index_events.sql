-- Index additions and removals, one row per event of a membership interval: `added` on its
-- added_date, `removed` on its removed_date (the first day it is no longer a member).

with membership as (
    select * from {{ ref('int_index_membership_resolved') }}
),

index_codes as (
    select * from {{ ref('int_index_codes') }}
),

entities as (
    select * from {{ ref('int_entities_unioned') }}
),

events as (
    select
        membership_id,
        'added' as event,
        index_code,
        added_date as effective_date,
        entity_id,
        ticker_at_added as ticker
    from membership
    where added_date is not null
    union all
    select
        membership_id,
        'removed' as event,
        index_code,
        removed_date as effective_date,
        entity_id,
        ticker_at_removal as ticker
    from membership
    where removed_date is not null
),

final as (
    select
        cast(events.membership_id as varchar) as membership_id,
        cast(events.event as varchar) as event,
        cast(events.index_code as varchar) as index_code,
        cast(coalesce(index_codes.index_name, upper(events.index_code)) as varchar)
            as index_name,
        cast(events.effective_date as date) as effective_date,
        cast(events.entity_id as bigint) as entity_id,
        cast(events.ticker as varchar) as ticker,
        cast(entities.name as varchar) as entity_name
    from events
    left join index_codes
        on events.index_code = index_codes.index_code
    left join entities
        on events.entity_id = entities.entity_id
)

select * from final
order by index_code, effective_date, event, entity_name, membership_id
