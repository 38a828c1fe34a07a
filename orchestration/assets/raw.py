"""One multi-asset per landing source: its files read by the real-format readers into raw.*."""

from collections.abc import Iterator

import dagster as dg

from findata.orchestration.assets.build_inputs import BUILD_INPUTS
from findata.orchestration.landing import LANDING_SOURCES, LandingSource, read_source
from findata.orchestration.raw import RAW_SCHEMA, write_raw_tables
from findata.settings import get_settings


def raw_asset_key(table: str) -> dg.AssetKey:
    """The asset key of raw table ``table`` (dbt sources map onto these)."""
    return dg.AssetKey([RAW_SCHEMA, table])


def _raw_source_asset(name: str, source: LandingSource) -> dg.AssetsDefinition:
    @dg.multi_asset(
        name=f"raw_{name}",
        specs=[
            dg.AssetSpec(
                raw_asset_key(table),
                group_name="raw",
                kinds={"duckdb"},
                description=f"Landing {source.folder} read into {RAW_SCHEMA}.{table}.",
                deps=[BUILD_INPUTS],  # skipped when nothing a build reads has changed
            )
            for table in source.tables
        ],
    )
    def load(context: dg.AssetExecutionContext) -> Iterator[dg.MaterializeResult]:
        settings = get_settings()
        files = source.files(settings.landing_dir)
        tables = read_source(settings.landing_dir, name, cache=settings.build_dir / "landing-cache")
        rows = write_raw_tables(settings.warehouse_path, tables)
        for table, count in rows.items():
            yield dg.MaterializeResult(
                asset_key=raw_asset_key(table),
                metadata={"rows": count, "landing_files": len(files)},
            )
        context.log.info(f"{source.folder}: {len(files)} files, rows {rows}")

    return load


raw_assets = [_raw_source_asset(name, source) for name, source in LANDING_SOURCES.items()]
