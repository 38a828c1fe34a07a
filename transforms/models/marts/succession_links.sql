-- Links between ticker periods that follow one another:
--   renamed    - one entity moves from an ended ticker to its next ticker (SOS -> FOL);
--   reused     - an ended ticker is next used by an entity of another issuer (RDE);
--   reassigned - an ended ticker is next used by another entity of the same issuer (a delisted
--                security's ticker kept by its issuer).
-- One row per (from period, to period); change_date is the successor period's first day.

with ticker_periods as (
    select * from {{ ref('int_ticker_periods_classified') }}
),

own_periods_in_order as (
    select
        *,
        lead(ticker) over by_entity as next_ticker,
        lead(valid_from) over by_entity as next_valid_from,
        lead(valid_to) over by_entity as next_valid_to
    from ticker_periods
    where ticker_kind = 'own'
    window by_entity as (partition by entity_id order by valid_from, ticker)
),

renamed as (
    select
        'renamed' as link_type,
        ticker as from_ticker,
        entity_id as from_entity_id,
        valid_from as from_valid_from,
        valid_to as from_valid_to,
        next_ticker as to_ticker,
        entity_id as to_entity_id,
        next_valid_from as change_date,
        next_valid_to as to_valid_to
    from own_periods_in_order
    where valid_to is not null
        and next_ticker <> ticker
        and next_valid_from > valid_from
),

next_users as (
    select
        case
            when successor.issuer_entity_id = predecessor.issuer_entity_id then 'reassigned'
            else 'reused'
        end as link_type,
        predecessor.ticker as from_ticker,
        predecessor.entity_id as from_entity_id,
        predecessor.valid_from as from_valid_from,
        predecessor.valid_to as from_valid_to,
        successor.ticker as to_ticker,
        successor.entity_id as to_entity_id,
        successor.valid_from as change_date,
        successor.valid_to as to_valid_to
    from ticker_periods as predecessor
    inner join ticker_periods as successor
        on predecessor.ticker = successor.ticker
        and predecessor.entity_id <> successor.entity_id
        and successor.valid_from > predecessor.valid_to
    -- the first entity to take the ticker after the predecessor left it (ties all kept)
    qualify rank() over (
        partition by predecessor.ticker, predecessor.entity_id, predecessor.valid_from
        order by successor.valid_from
    ) = 1
),

unioned as (
    select * from renamed
    union all
    select * from next_users
),

final as (
    select
        cast(link_type as varchar) as link_type,
        cast(from_ticker as varchar) as from_ticker,
        cast(from_entity_id as bigint) as from_entity_id,
        cast(from_valid_from as date) as from_valid_from,
        cast(from_valid_to as date) as from_valid_to,
        cast(to_ticker as varchar) as to_ticker,
        cast(to_entity_id as bigint) as to_entity_id,
        cast(change_date as date) as change_date,
        cast(to_valid_to as date) as to_valid_to
    from unioned
)

select * from final
order by from_ticker, from_valid_from, from_entity_id, to_entity_id
