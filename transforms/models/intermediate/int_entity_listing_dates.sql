-- When each entity was listed: its first and last bar, and the span of its ticker periods. A
-- security is still listed (listed_to null) while one of its ticker periods is open; an issuer
-- spans its securities (or, with none, its own ticker periods).

with ticker_periods as (
    select * from {{ ref('int_ticker_periods_classified') }}
),

bars as (
    select
        entity_id,
        min(trade_date) as first_price_date,
        max(trade_date) as last_price_date
    from {{ ref('int_prices_resolved') }}
    group by entity_id
),

periods as (
    select
        entity_id,
        any_value(entity_grain) as entity_grain,
        any_value(issuer_entity_id) as issuer_entity_id,
        min(valid_from) as first_valid_from,
        bool_or(valid_to is null) as has_open_period,
        max(valid_to) as last_valid_to
    from ticker_periods
    group by entity_id
),

securities as (
    select
        periods.entity_id,
        periods.issuer_entity_id,
        bars.first_price_date,
        bars.last_price_date,
        least(periods.first_valid_from, bars.first_price_date) as listed_from,
        case
            when not periods.has_open_period
                then greatest(periods.last_valid_to, bars.last_price_date)
        end as listed_to
    from periods
    left join bars
        on periods.entity_id = bars.entity_id
    where periods.entity_grain = 'security'
),

issuers_from_securities as (
    select
        issuer_entity_id as entity_id,
        min(listed_from) as listed_from,
        case when bool_and(listed_to is not null) then max(listed_to) end as listed_to
    from securities
    group by issuer_entity_id
),

issuers_from_own_periods as (
    select
        entity_id,
        first_valid_from as listed_from,
        case when not has_open_period then last_valid_to end as listed_to
    from periods
    where entity_grain = 'issuer'
),

issuer_ids as (
    select distinct issuer_entity_id as entity_id
    from ticker_periods
),

issuers as (
    select
        issuer_ids.entity_id,
        cast(null as date) as first_price_date,
        cast(null as date) as last_price_date,
        coalesce(issuers_from_securities.listed_from, issuers_from_own_periods.listed_from)
            as listed_from,
        case
            when issuers_from_securities.entity_id is not null
                then issuers_from_securities.listed_to
            else issuers_from_own_periods.listed_to
        end as listed_to
    from issuer_ids
    left join issuers_from_securities
        on issuer_ids.entity_id = issuers_from_securities.entity_id
    left join issuers_from_own_periods
        on issuer_ids.entity_id = issuers_from_own_periods.entity_id
),

unioned as (
    select
        entity_id,
        first_price_date,
        last_price_date,
        listed_from,
        listed_to
    from securities
    union all
    select
        entity_id,
        first_price_date,
        last_price_date,
        listed_from,
        listed_to
    from issuers
)

select * from unioned
