-- The reporting owners of each Form 4 as one row per accession: a joint filing's owners are
-- listed in owner CIK order, separated by '; '. The relationship reads like
-- "director, officer (Chief Executive Officer), 10% owner, other (text)".

with owners as (
    select * from {{ ref('stg_sec__form4_owners') }}
),

described as (
    select
        accession,
        owner_cik,
        owner_name,
        nullif(concat_ws(
            ', ',
            case when is_director then 'director' end,
            case when is_officer
                then 'officer' || coalesce(' (' || nullif(trim(officer_title), '') || ')', '')
            end,
            case when is_ten_percent_owner then '10% owner' end,
            case when is_other
                then 'other' || coalesce(' (' || nullif(trim(other_text), '') || ')', '')
            end
        ), '') as owner_relationship
    from owners
),

combined as (
    select
        accession,
        count(*) as owners,
        string_agg(owner_cik, '; ' order by owner_cik) as owner_cik,
        string_agg(owner_name, '; ' order by owner_cik) as owner_name,
        string_agg(coalesce(owner_relationship, ''), '; ' order by owner_cik) as owner_relationship
    from described
    group by accession
)

select * from combined
