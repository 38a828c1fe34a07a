-- Ratios per issuer and period as known at each date: one row per fundamentals row (the latest
-- filing when several reported the period the same day), valued with the issuer's primary
-- security's close at the period end. known_from is the later of the filing date and the price
-- date; is_latest marks the row valid now for the period.

with fundamentals as (
    select * from {{ ref('fundamentals') }}
),

trailing_figures as (
    select * from {{ ref('int_fundamentals_trailing') }}
),

period_end_prices as (
    select * from {{ ref('int_period_end_prices') }}
),

joined as (
    select
        fundamentals.issuer_entity_id,
        fundamentals.period_end,
        fundamentals.period_type,
        greatest(
            fundamentals.known_from,
            coalesce(period_end_prices.price_date, fundamentals.known_from)
        ) as known_from,
        fundamentals.accession,
        fundamentals.known_from as filing_date,
        fundamentals.fiscal_year,
        fundamentals.fiscal_period,
        fundamentals.revenue,
        coalesce(
            fundamentals.gross_profit, fundamentals.revenue - fundamentals.cost_of_revenue
        ) as gross_profit,
        fundamentals.operating_income,
        fundamentals.net_income,
        fundamentals.stockholders_equity,
        coalesce(fundamentals.shares_outstanding, fundamentals.shares_weighted_basic) as shares,
        coalesce(fundamentals.eps_diluted, fundamentals.eps_basic) as eps,
        trailing_figures.eps_ttm,
        trailing_figures.revenue_year_earlier,
        period_end_prices.price_entity_id,
        period_end_prices.price_date,
        period_end_prices.price_close,
        coalesce(
            period_end_prices.market_cap,
            period_end_prices.price_close
            * coalesce(fundamentals.shares_outstanding, fundamentals.shares_weighted_basic)
        ) as market_cap
    from fundamentals
    left join trailing_figures
        on fundamentals.issuer_entity_id = trailing_figures.issuer_entity_id
        and fundamentals.period_end = trailing_figures.period_end
        and fundamentals.period_type = trailing_figures.period_type
        and fundamentals.accession = trailing_figures.accession
    left join period_end_prices
        on fundamentals.issuer_entity_id = period_end_prices.issuer_entity_id
        and fundamentals.period_end = period_end_prices.period_end
),

one_per_day as (
    select * from joined
    qualify row_number() over (
        partition by issuer_entity_id, period_end, period_type, known_from
        order by {{ filing_order('filing_date', 'accession', latest_first=true) }}
    ) = 1
),

computed as (
    select
        *,
        case when revenue <> 0 then gross_profit / revenue end as gross_margin,
        case when revenue <> 0 then operating_income / revenue end as operating_margin,
        case when revenue <> 0 then net_income / revenue end as net_margin,
        case when revenue_year_earlier > 0
            then revenue / revenue_year_earlier - 1 end as revenue_growth_yoy,
        case when shares > 0 then stockholders_equity / shares end as book_value_per_share,
        case when eps_ttm > 0 then price_close / eps_ttm end as pe_ratio,
        case when stockholders_equity > 0 then market_cap / stockholders_equity end as pb_ratio,
        row_number() over (
            partition by issuer_entity_id, period_end, period_type order by known_from desc
        ) = 1 as is_latest
    from one_per_day
),

final as (
    select
        cast(issuer_entity_id as bigint) as issuer_entity_id,
        cast(period_end as date) as period_end,
        cast(period_type as varchar) as period_type,
        cast(known_from as date) as known_from,
        cast(accession as varchar) as accession,
        cast(filing_date as date) as filing_date,
        cast(fiscal_year as integer) as fiscal_year,
        cast(fiscal_period as varchar) as fiscal_period,
        cast(gross_margin as double) as gross_margin,
        cast(operating_margin as double) as operating_margin,
        cast(net_margin as double) as net_margin,
        cast(revenue_growth_yoy as double) as revenue_growth_yoy,
        cast(eps as double) as eps,
        cast(eps_ttm as double) as eps_ttm,
        cast(book_value_per_share as double) as book_value_per_share,
        cast(price_entity_id as bigint) as price_entity_id,
        cast(price_date as date) as price_date,
        cast(price_close as double) as price_close,
        cast(market_cap as double) as market_cap,
        cast(pe_ratio as double) as pe_ratio,
        cast(pb_ratio as double) as pb_ratio,
        cast(is_latest as boolean) as is_latest
    from computed
)

select * from final
