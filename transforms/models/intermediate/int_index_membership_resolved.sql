-- Index membership intervals [added_date, removed_date) with the member security resolved.
-- Rows of the publishers' ticker-only layouts are resolved by ticker on the added date (else the
-- last day of membership, else today's validity) through the security master: the one security
-- the ticker names then, or the one whose own ticker it is; otherwise entity_id stays null.
-- Each interval also carries the member's own ticker when it was added and when it left.
-- One row per membership_id (index code, publisher ticker, added date: the landing key);
-- an interval listed by several files under one security and added date is kept once.

with membership as (
    select
        *,
        index_code || '|' || ticker || '|'
        || coalesce(strftime(added_date, '%Y-%m-%d'), 'unknown') as membership_id,
        coalesce(added_date, removed_date - 1, date '9999-12-31') as resolve_date
    from {{ ref('stg_market__index_membership') }}
),

security_ticker_periods as (
    select * from {{ ref('int_ticker_periods_classified') }}
    where entity_grain = 'security'
),

own_ticker_periods as (
    select * from {{ ref('int_security_own_ticker_periods') }}
),

candidates as (
    select
        membership.membership_id,
        security_ticker_periods.entity_id,
        security_ticker_periods.ticker_kind,
        count(*) over (partition by membership.membership_id) as candidates,
        count(*) filter (where security_ticker_periods.ticker_kind = 'own') over (
            partition by membership.membership_id
        ) as own_candidates
    from membership
    inner join security_ticker_periods
        on membership.ticker = security_ticker_periods.ticker
        and membership.resolve_date >= security_ticker_periods.valid_from
        and membership.resolve_date
        <= coalesce(security_ticker_periods.valid_to, date '9999-12-31')
    where membership.entity_id is null
),

resolved_by_ticker as (
    select
        membership_id,
        entity_id
    from candidates
    where candidates = 1
        or (own_candidates = 1 and ticker_kind = 'own')
),

resolved as (
    select
        membership.membership_id,
        membership.index_code,
        coalesce(membership.entity_id, resolved_by_ticker.entity_id) as entity_id,
        membership.entity_id is not null as entity_id_from_source,
        membership.ticker as source_ticker,
        membership.added_date,
        membership.removed_date
    from membership
    left join resolved_by_ticker
        on membership.membership_id = resolved_by_ticker.membership_id
),

deduplicated as (
    select * from resolved
    qualify entity_id is null
        or row_number() over (
            partition by index_code, entity_id, added_date
            order by entity_id_from_source desc, source_ticker
        ) = 1
),

with_ticker_at_added as (
    select
        deduplicated.*,
        own_ticker_periods.ticker as ticker_at_added
    from deduplicated
    asof left join own_ticker_periods
        on deduplicated.entity_id = own_ticker_periods.entity_id
        and deduplicated.added_date >= own_ticker_periods.valid_from
),

with_ticker_at_removal as (
    -- the ticker on the last day of membership (the day before removed_date)
    select
        with_ticker_at_added.*,
        own_ticker_periods.ticker as ticker_at_removal
    from with_ticker_at_added
    asof left join own_ticker_periods
        on with_ticker_at_added.entity_id = own_ticker_periods.entity_id
        and with_ticker_at_added.removed_date - 1 >= own_ticker_periods.valid_from
)

select
    membership_id,
    index_code,
    entity_id,
    source_ticker,
    coalesce(ticker_at_added, source_ticker) as ticker_at_added,
    coalesce(ticker_at_removal, ticker_at_added, source_ticker) as ticker_at_removal,
    added_date,
    removed_date
from with_ticker_at_removal
