-- XBRL facts of 10-K and 10-Q filings (and their amendments) read into the fundamentals items:
-- each fact mapped to its issuer (CIK -> issuer_entity_id through the security master) and to an
-- item by its us-gaap / dei tag (the best-ranked tag wins when a filing reports several for one
-- item and period), and classified by the period it covers: `quarterly` (a duration of about 3
-- months), `annual` (about 12 months), `instant` (a balance-sheet date) or `cover` (the dei
-- shares-outstanding figure on the filing's cover page). Other durations (6- and 9-month
-- year-to-date figures) are left out. Only the facts of the issuers the build recomputes
-- (int_fundamentals_issuers_fingerprinted: every issuer on a full build).

with facts as (
    select * from {{ ref('stg_sec__facts') }}
),

issuers_to_build as (
    select issuer_entity_id
    from {{ ref('int_fundamentals_issuers_fingerprinted') }}
    where is_rebuilt
),

-- the issuers this build recomputes alone (all of them on a full build): the facts of the
-- others are not read past the join below
issuers as (
    select * from {{ ref('int_issuer_ciks') }}
    where issuer_entity_id in (select issuers_to_build.issuer_entity_id from issuers_to_build)
),

item_tags as (
    select * from (
        values
        ('us-gaap', 'Revenues', 'USD', 'revenue', 1),
        ('us-gaap', 'RevenueFromContractWithCustomerExcludingAssessedTax', 'USD', 'revenue', 2),
        ('us-gaap', 'SalesRevenueNet', 'USD', 'revenue', 3),
        ('us-gaap', 'RevenueFromContractWithCustomerIncludingAssessedTax', 'USD', 'revenue', 4),
        ('us-gaap', 'CostOfRevenue', 'USD', 'cost_of_revenue', 1),
        ('us-gaap', 'CostOfGoodsAndServicesSold', 'USD', 'cost_of_revenue', 2),
        ('us-gaap', 'CostOfGoodsSold', 'USD', 'cost_of_revenue', 3),
        ('us-gaap', 'GrossProfit', 'USD', 'gross_profit', 1),
        ('us-gaap', 'OperatingIncomeLoss', 'USD', 'operating_income', 1),
        ('us-gaap', 'NetIncomeLoss', 'USD', 'net_income', 1),
        ('us-gaap', 'ProfitLoss', 'USD', 'net_income', 2),
        ('us-gaap', 'NetCashProvidedByUsedInOperatingActivities', 'USD', 'operating_cash_flow', 1),
        (
            'us-gaap',
            'NetCashProvidedByUsedInOperatingActivitiesContinuingOperations',
            'USD',
            'operating_cash_flow',
            2
        ),
        ('us-gaap', 'Assets', 'USD', 'total_assets', 1),
        ('us-gaap', 'Liabilities', 'USD', 'total_liabilities', 1),
        ('us-gaap', 'StockholdersEquity', 'USD', 'stockholders_equity', 1),
        (
            'us-gaap',
            'StockholdersEquityIncludingPortionAttributableToNoncontrollingInterest',
            'USD',
            'stockholders_equity',
            2
        ),
        ('us-gaap', 'CashAndCashEquivalentsAtCarryingValue', 'USD', 'cash', 1),
        (
            'us-gaap',
            'CashCashEquivalentsRestrictedCashAndRestrictedCashEquivalents',
            'USD',
            'cash',
            2
        ),
        ('us-gaap', 'EarningsPerShareBasic', 'USD/shares', 'eps_basic', 1),
        ('us-gaap', 'EarningsPerShareBasicAndDiluted', 'USD/shares', 'eps_basic', 2),
        ('us-gaap', 'EarningsPerShareDiluted', 'USD/shares', 'eps_diluted', 1),
        ('us-gaap', 'EarningsPerShareBasicAndDiluted', 'USD/shares', 'eps_diluted', 2),
        (
            'us-gaap',
            'WeightedAverageNumberOfSharesOutstandingBasic',
            'shares',
            'shares_weighted_basic',
            1
        ),
        ('dei', 'EntityCommonStockSharesOutstanding', 'shares', 'shares_outstanding', 1)
    ) as t (taxonomy, tag, unit, item, priority)
),

mapped as (
    select
        issuers.issuer_entity_id,
        facts.accession,
        facts.form,
        facts.filed_date,
        facts.fiscal_year,
        facts.fiscal_period,
        item_tags.item,
        item_tags.priority,
        facts.period_start,
        facts.period_end,
        facts.value,
        case
            when item_tags.item = 'shares_outstanding' then 'cover'
            when facts.period_start is null then 'instant'
            else {{ period_type_of('facts.period_start', 'facts.period_end') }}
        end as period_kind
    from facts
    inner join item_tags
        on facts.taxonomy = item_tags.taxonomy
        and facts.tag = item_tags.tag
        and facts.unit = item_tags.unit
    inner join issuers
        on lpad(facts.cik, 10, '0') = issuers.cik
    where (facts.form like '10-K%' or facts.form like '10-Q%')
        and facts.value is not null
        and facts.period_end is not null
),

best_tag as (
    select * from mapped
    where period_kind is not null
    qualify row_number() over (
        partition by
            accession,
            item,
            period_kind,
            case when period_kind = 'cover' then null else period_end end
        order by
            priority,
            case when period_kind = 'cover' then period_end end desc,
            period_start desc,
            value
    ) = 1
)

select
    issuer_entity_id,
    accession,
    form,
    filed_date,
    fiscal_year,
    fiscal_period,
    item,
    period_kind,
    period_start,
    period_end,
    value
from best_tag
