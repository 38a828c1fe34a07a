"""One multi-asset per landing source: its files read by the real-format readers into raw.*."""

import hashlib
from collections.abc import Iterator
from pathlib import Path

import dagster as dg

from findata.orchestration.assets.build_inputs import BUILD_INPUTS
from findata.orchestration.build_inputs import code_fingerprint, files_fingerprint
from findata.orchestration.landing import LANDING_SOURCES, LandingSource
from findata.orchestration.landing_cache import load_source
from findata.orchestration.raw import RAW_SCHEMA, unchanged_raw_tables
from findata.settings import get_settings


def raw_asset_key(table: str) -> dg.AssetKey:
    """The asset key of raw table ``table`` (dbt sources map onto these)."""
    return dg.AssetKey([RAW_SCHEMA, table])


def source_fingerprint(landing: Path, files: list[Path]) -> str:
    """A source's files (paths, sizes, modification times) and the code that reads them."""
    return hashlib.sha256(
        f"{code_fingerprint()[0]} {files_fingerprint(landing, files)}".encode()
    ).hexdigest()


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
        fingerprint = source_fingerprint(settings.landing_dir, files)
        warehouse = settings.warehouse_path
        rows = unchanged_raw_tables(warehouse, name, fingerprint, source.tables)
        unchanged = rows is not None
        if rows is None:
            rows = load_source(
                settings.landing_dir,
                name,
                settings.build_dir / "landing-cache" / name,
                warehouse,
                fingerprint,
                memory_limit=settings.build_memory_limit,
                workers=settings.build_workers,
            )
        for table, count in rows.items():
            yield dg.MaterializeResult(
                asset_key=raw_asset_key(table),
                metadata={"rows": count, "landing_files": len(files), "unchanged": unchanged},
            )
        kept = " (unchanged since the last read: kept as they are)" if unchanged else ""
        context.log.info(f"{source.folder}: {len(files)} files, rows {rows}{kept}")

    return load


raw_assets = [_raw_source_asset(name, source) for name, source in LANDING_SOURCES.items()]
