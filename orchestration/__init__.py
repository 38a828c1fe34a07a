"""Dagster side of findata: source readers, the demo-universe generator, assets and schedules."""
