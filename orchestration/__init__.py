"""Dagster wiring: definitions, assets, contract-check wiring, sensors, schedules, resources."""
