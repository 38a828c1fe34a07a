"""The dbt project (models, macros, profile): package data of ``findata.transforms``, so an
installed findata runs its pipeline outside the checkout. No Python lives here."""
