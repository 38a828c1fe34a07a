with source as (
    select * from {{ source('market', 'corporate_actions') }}
),

renamed as (
    select
        entity_id,
        ticker,
        action,
        cast(ex_date as date) as ex_date,
        cast(announced as date) as announced_date,
        ratio as split_ratio,
        amount as dividend_amount
    from source
)

select * from renamed
