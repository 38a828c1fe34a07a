"""The landing sources' files read by the real-format readers into raw.*: one multi-asset, a
Dagster asset per raw table."""

import hashlib
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path

import dagster as dg

from findata.orchestration.assets.build_inputs import BUILD_INPUTS
from findata.orchestration.build_inputs import code_fingerprint, files_fingerprint
from findata.orchestration.refresh_lock import REFRESH_LOCK
from findata.settings import get_settings
from findata.sources.landing import LANDING_SOURCES, LandingSource
from findata.sources.landing_cache import load_source
from findata.sources.raw import RAW_SCHEMA, unchanged_raw_tables


def raw_asset_key(table: str) -> dg.AssetKey:
    """The asset key of raw table ``table`` (dbt sources map onto these)."""
    return dg.AssetKey([RAW_SCHEMA, table])


def source_fingerprint(landing: Path, files: list[Path]) -> str:
    """A source's files (paths, sizes, modification times) and the code that reads them."""
    return hashlib.sha256(
        f"{code_fingerprint()[0]} {files_fingerprint(landing, files)}".encode()
    ).hexdigest()


@dg.multi_asset(
    name="raw_tables",
    specs=[
        dg.AssetSpec(
            raw_asset_key(table),
            group_name="raw",
            kinds={"duckdb"},
            description=f"Landing {source.folder} read into {RAW_SCHEMA}.{table}.",
            deps=[BUILD_INPUTS],  # skipped when nothing a build reads has changed
        )
        for source in LANDING_SOURCES.values()
        for table in source.tables
    ],
    can_subset=True,
    required_resource_keys={REFRESH_LOCK},
)
def raw_tables(context: dg.AssetExecutionContext) -> Iterator[dg.MaterializeResult]:
    """Each landing source read into its raw tables, one source after another, in one step (a
    step per source cost Dagster's bookkeeping, ~70 ms, eight times on every run, when most
    sources are unchanged and are kept as they are in milliseconds).

    A selection of some raw tables reads the sources they come from: a source's tables are
    written together (from the same files), and those selected are reported.
    """
    selected = context.selected_asset_keys
    for name, source in LANDING_SOURCES.items():
        if any(raw_asset_key(table) in selected for table in source.tables):
            yield from _read_source(context, name, source, selected)


def _read_source(
    context: dg.AssetExecutionContext,
    name: str,
    source: LandingSource,
    selected: AbstractSet[dg.AssetKey],
) -> Iterator[dg.MaterializeResult]:
    """Landing source ``name`` into its raw tables, unless its files and the code reading them
    are as when they were last read; a result for each of its tables in ``selected``."""
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
        )
    for table, count in rows.items():
        if raw_asset_key(table) in selected:
            yield dg.MaterializeResult(
                asset_key=raw_asset_key(table),
                metadata={"rows": count, "landing_files": len(files), "unchanged": unchanged},
            )
    kept = " (unchanged since the last read: kept as they are)" if unchanged else ""
    context.log.info(f"{source.folder}: {len(files)} files, rows {rows}{kept}")
