"""Dagster assets: landing → raw tables → dbt models → contract checks → published version."""
