"""Dagster assets: landing → raw tables → dbt models → contract checks → published version."""
# no `from __future__ import annotations` in asset modules: Dagster reads the real types
