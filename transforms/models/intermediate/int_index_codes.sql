-- The indexes served: lower-case code (as in landing and in API paths) and display name.

with index_codes as (
    select *
    from (
        values
        ('sp500', 'S&P 500'),
        ('djia', 'Dow Jones Industrial Average'),
        ('ndx100', 'Nasdaq-100')
    ) as codes (index_code, index_name)
)

select * from index_codes
