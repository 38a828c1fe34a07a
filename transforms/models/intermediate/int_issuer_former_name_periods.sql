-- The names a company used before its current one (SEC submissions `formerNames`), by CIK, as
-- non-overlapping periods [name_from, name_to]; outside them the company's current name applies.

with former_names as (
    select * from {{ ref('stg_sec__former_names') }}
    where name_from is not null
),

bounded as (
    select
        cik,
        former_name,
        name_from,
        least(
            coalesce(name_to, date '9999-12-31'),
            coalesce(
                lead(name_from) over (partition by cik order by name_from, former_name) - 1,
                date '9999-12-31'
            )
        ) as name_to
    from former_names
)

select * from bounded
where name_to >= name_from
