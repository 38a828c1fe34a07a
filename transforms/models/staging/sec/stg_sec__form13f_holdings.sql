with source as (
    select * from {{ source('sec', 'form13f_holdings') }}
),

renamed as (
    select
        accession,
        line_number,
        name_of_issuer,
        title_of_class,
        upper(cusip) as cusip,
        figi,
        value_reported,
        value_usd,
        shares,
        sh_prn as shares_or_principal,
        put_call,
        investment_discretion,
        other_manager,
        voting_sole,
        voting_shared,
        voting_none
    from source
)

select * from renamed
