-- For each fundamentals row, figures of neighbouring periods as known at the row's known_from
-- (for each other period, its latest row known by then; the row's own filing wins ties):
-- the same period a year earlier's revenue, and the trailing-twelve-month EPS.
-- EPS (diluted, else basic) of other periods is put on the share basis of the row's period end
-- with the primary security's split indexes. Trailing EPS of a quarterly row: the sum of the four
-- quarters ending at the period end when all are known; otherwise the latest annual EPS of the
-- last twelve months plus each later quarter's EPS less the same quarter a year earlier.
-- Annual rows: their own EPS.

-- Every figure of a row comes from its issuer's statements alone, so the model is incremental
-- by issuer: each row carries inputs_print, a fingerprint of its issuer's statements (the
-- fundamentals rows and the split index at each period end; rows_print, macros/fingerprints.sql),
-- and a build recomputes the
-- issuers whose fingerprint differs from the table's (new, restated or split-adjusted again);
-- a new trading day changes none. Issuers without statements any more are deleted.
-- `--full-refresh` (a forced build, or other code) rebuilds the table whole.
{{ config(
    materialized='incremental',
    incremental_strategy='delete+insert',
    unique_key='issuer_entity_id',
    on_schema_change='fail',
    post_hook="
        delete from {{ this }} as built
        where not exists (
            select 1 from {{ ref('fundamentals') }} as f
            where f.issuer_entity_id = built.issuer_entity_id
        )",
) }}

with fundamentals as (
    select * from {{ ref('fundamentals') }}
),

period_end_prices as (
    select * from {{ ref('int_period_end_prices') }}
),

all_statements as (
    select
        fundamentals.issuer_entity_id,
        fundamentals.period_end,
        fundamentals.period_type,
        fundamentals.accession,
        fundamentals.known_from,
        fundamentals.revenue,
        coalesce(fundamentals.eps_diluted, fundamentals.eps_basic) as eps,
        coalesce(period_end_prices.split_index, 1.0) as split_index
    from fundamentals
    left join period_end_prices
        on fundamentals.issuer_entity_id = period_end_prices.issuer_entity_id
        and fundamentals.period_end = period_end_prices.period_end
),

issuer_inputs as (
    select
        issuer_entity_id,
        {{ rows_print('all_statements') }} as inputs_print
    from all_statements
    group by issuer_entity_id
),

issuers_to_build as (
    select issuer_inputs.issuer_entity_id
    from issuer_inputs
    {% if is_incremental() %}
    left join (select distinct issuer_entity_id, inputs_print from {{ this }}) as built
        on issuer_inputs.issuer_entity_id = built.issuer_entity_id
    where built.inputs_print is distinct from issuer_inputs.inputs_print
    {% endif %}
),

statements as (
    select *
    from all_statements
    where issuer_entity_id in (select issuers_to_build.issuer_entity_id from issuers_to_build)
),

known_versions as (
    select
        r.issuer_entity_id,
        r.period_end as r_period_end,
        r.period_type as r_period_type,
        r.accession as r_accession,
        c.period_end,
        c.period_type,
        c.revenue,
        c.eps * c.split_index / r.split_index as eps_adjusted
    from statements as r
    inner join statements as c
        on r.issuer_entity_id = c.issuer_entity_id
        and c.known_from <= r.known_from
        and c.period_end <= r.period_end
        and c.period_end >= r.period_end - 740
    qualify row_number() over (
        partition by
            r.issuer_entity_id, r.period_end, r.period_type, r.accession,
            c.period_end, c.period_type
        order by {{ filing_order(
            'c.known_from', 'c.accession', latest_first=true, preferred_accession='r.accession'
        ) }}
    ) = 1
),

year_earlier as (
    select
        issuer_entity_id,
        r_period_end,
        r_period_type,
        r_accession,
        revenue as revenue_year_earlier
    from known_versions
    where period_type = r_period_type
        and {{ a_year_before('period_end', 'r_period_end') }}
    qualify row_number() over (
        partition by issuer_entity_id, r_period_end, r_period_type, r_accession
        order by abs(datediff('day', period_end, r_period_end) - 365), period_end desc
    ) = 1
),

quarters as (
    select * from known_versions
    where r_period_type = 'quarterly'
        and period_type = 'quarterly'
),

four_quarters as (
    select
        issuer_entity_id,
        r_period_end,
        r_period_type,
        r_accession,
        count(eps_adjusted) as quarters_with_eps,
        -- summed in period order: floating-point addition is not associative, and a hash
        -- aggregate adds in any order, so an unchanged input could publish a changed last digit
        sum(eps_adjusted order by period_end) as eps_sum
    from quarters
    where {{ within_a_year_before('period_end', 'r_period_end') }}
    group by issuer_entity_id, r_period_end, r_period_type, r_accession
),

annual_anchor as (
    select
        issuer_entity_id,
        r_period_end,
        r_period_type,
        r_accession,
        period_end as anchor_period_end,
        eps_adjusted as anchor_eps
    from known_versions
    where r_period_type = 'quarterly'
        and period_type = 'annual'
        and {{ within_a_year_before('period_end', 'r_period_end') }}
    qualify row_number() over (
        partition by issuer_entity_id, r_period_end, r_period_type, r_accession
        order by period_end desc
    ) = 1
),

since_anchor as (
    select
        current_quarter.issuer_entity_id,
        current_quarter.r_period_end,
        current_quarter.r_period_type,
        current_quarter.r_accession,
        count(*) as quarters,
        count(current_quarter.eps_adjusted - earlier_quarter.eps_adjusted) as quarters_with_change,
        sum(
            current_quarter.eps_adjusted - earlier_quarter.eps_adjusted
            order by current_quarter.period_end
        ) as eps_change
    from quarters as current_quarter
    inner join annual_anchor
        on current_quarter.issuer_entity_id = annual_anchor.issuer_entity_id
        and current_quarter.r_period_end = annual_anchor.r_period_end
        and current_quarter.r_period_type = annual_anchor.r_period_type
        and current_quarter.r_accession = annual_anchor.r_accession
    left join quarters as earlier_quarter
        on current_quarter.issuer_entity_id = earlier_quarter.issuer_entity_id
        and current_quarter.r_period_end = earlier_quarter.r_period_end
        and current_quarter.r_period_type = earlier_quarter.r_period_type
        and current_quarter.r_accession = earlier_quarter.r_accession
        and {{ a_year_before('earlier_quarter.period_end', 'current_quarter.period_end') }}
    where current_quarter.period_end > annual_anchor.anchor_period_end
    group by
        current_quarter.issuer_entity_id,
        current_quarter.r_period_end,
        current_quarter.r_period_type,
        current_quarter.r_accession
)

select
    statements.issuer_entity_id,
    statements.period_end,
    statements.period_type,
    statements.accession,
    year_earlier.revenue_year_earlier,
    case
        when statements.period_type = 'annual' then statements.eps
        when four_quarters.quarters_with_eps = 4 then four_quarters.eps_sum
        when annual_anchor.anchor_period_end = statements.period_end then annual_anchor.anchor_eps
        when since_anchor.quarters = since_anchor.quarters_with_change
            and since_anchor.quarters
            = {{ quarters_between('annual_anchor.anchor_period_end', 'statements.period_end') }}
            then annual_anchor.anchor_eps + since_anchor.eps_change
    end as eps_ttm,
    issuer_inputs.inputs_print
from statements
inner join issuer_inputs
    on statements.issuer_entity_id = issuer_inputs.issuer_entity_id
left join year_earlier
    on statements.issuer_entity_id = year_earlier.issuer_entity_id
    and statements.period_end = year_earlier.r_period_end
    and statements.period_type = year_earlier.r_period_type
    and statements.accession = year_earlier.r_accession
left join four_quarters
    on statements.issuer_entity_id = four_quarters.issuer_entity_id
    and statements.period_end = four_quarters.r_period_end
    and statements.period_type = four_quarters.r_period_type
    and statements.accession = four_quarters.r_accession
left join annual_anchor
    on statements.issuer_entity_id = annual_anchor.issuer_entity_id
    and statements.period_end = annual_anchor.r_period_end
    and statements.period_type = annual_anchor.r_period_type
    and statements.accession = annual_anchor.r_accession
left join since_anchor
    on statements.issuer_entity_id = since_anchor.issuer_entity_id
    and statements.period_end = since_anchor.r_period_end
    and statements.period_type = since_anchor.r_period_type
    and statements.accession = since_anchor.r_accession
