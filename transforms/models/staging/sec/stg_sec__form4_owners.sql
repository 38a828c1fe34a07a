with source as (
    select * from {{ source('sec', 'form4_owners') }}
),

renamed as (
    select
        accession,
        owner_cik,
        owner_name,
        is_director,
        is_officer,
        officer_title,
        is_ten_percent_owner,
        is_other,
        other_text
    from source
)

select * from renamed
