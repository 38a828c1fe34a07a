with source as (
    select * from {{ source('sec', 'form4_lines') }}
),

renamed as (
    select
        accession,
        line_sequence,
        "table" = 'derivative' as is_derivative,
        kind = 'holding' as is_holding,
        security_title,
        cast(transaction_date as date) as transaction_date,
        cast(deemed_execution_date as date) as deemed_execution_date,
        transaction_code,
        equity_swap_involved,
        shares,
        price_per_share,
        acquired_disposed,
        shares_owned_following,
        value_owned_following,
        direct_or_indirect,
        nature_of_ownership,
        conversion_or_exercise_price,
        cast(exercise_date as date) as exercise_date,
        cast(expiration_date as date) as expiration_date,
        underlying_title,
        underlying_shares,
        footnote_ids
    from source
)

select * from renamed
