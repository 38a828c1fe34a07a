"""A landing source read into its raw tables, parsing only the units not parsed before.

The readers parse a landing unit (a file, or a 13F folder) into pandas frames; the parsed rows
are kept in the pipeline's cache (``build/landing-cache/<source>/<table>.parquet``, each row
tagged with its unit's key and its position in the unit) with ``units.json`` naming the units
the files hold and the tables' column types. A refresh parses the new and changed units only;
DuckDB merges their rows with the cached ones (units in landing order, rows in unit order),
writes the raw tables from the result and the cache for the next time. Fifteen million cached
price rows and a new day's file cost a DuckDB scan, not a pandas round trip of every row.

Written in this order, so that a crash anywhere leaves a cache that says no more than it holds:
the new Parquet files beside the old ones, the raw tables and the source's fingerprint (one
transaction), the Parquet files renamed into place, then ``units.json``. Rows of units that
``units.json`` does not name are never taken from the cache (they are parsed again).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from findata.orchestration.landing import LANDING_SOURCES, LandingSource, concat_frames, unit_key
from findata.orchestration.raw import RAW_SCHEMA, raw_transaction

UNITS_FILE = "units.json"
#: parsed rows pandas holds per table before DuckDB takes them (a few hundred MB at most)
BATCH_ROWS = 1_000_000
_UNIT = "_landing_unit"
_POSITION = "_landing_position"


def load_source(
    landing: Path,
    name: str,
    cache: Path,
    database: Path,
    fingerprint: str,
    *,
    memory_limit: str,
    batch_rows: int = BATCH_ROWS,
) -> dict[str, int]:
    """Replace source ``name``'s raw tables in ``database`` with its landing units' rows, with
    its ``fingerprint``, parsing only the units ``cache`` does not hold; rows per table. DuckDB
    merges them within ``memory_limit``, spilling beside the cache beyond it; pandas holds the
    parsed rows of ``batch_rows`` at a time."""
    source = LANDING_SOURCES[name]
    units = {unit_key(unit): unit for unit in source.units(landing)}
    keys = list(units)
    held = _held(cache, source)
    known = set(held["units"]) & set(keys) if held else set()
    staged = {table: cache / f".staging-{table}.parquet" for table in source.tables}
    spill = cache / ".spill"
    cache.mkdir(parents=True, exist_ok=True)  # DuckDB makes the spill folder, not its parents
    try:
        config = {"memory_limit": memory_limit, "temp_directory": str(spill)}
        with duckdb.connect(config=config) as con:
            con.execute(
                "CREATE TEMP TABLE unit_order AS SELECT CAST(unnest($keys) AS VARCHAR) AS unit, "
                "generate_subscripts($keys, 1) AS place",
                {"keys": keys},
            )
            con.execute(
                "CREATE TEMP TABLE known_units AS SELECT CAST(unnest($known) AS VARCHAR) AS unit",
                {"known": sorted(known)},
            )
            fresh = _parse_into(con, source, units, known, batch_rows)
            types = {
                table: _stage(
                    con,
                    cache / f"{table}.parquet",
                    (held or {}).get("columns", {}).get(table),
                    fresh[table],
                    staged[table],
                )
                for table in source.tables
            }
        with raw_transaction(database, name, fingerprint) as con:
            rows = {}
            for table in source.tables:
                con.execute(
                    f'CREATE OR REPLACE TABLE {RAW_SCHEMA}."{table}" AS SELECT '
                    f"{_typed(types[table])} FROM read_parquet('{staged[table]}')"
                )
                rows[table] = con.execute(
                    f'SELECT count(*) FROM {RAW_SCHEMA}."{table}"'
                ).fetchall()[0][0]
        for table in source.tables:
            os.replace(staged[table], cache / f"{table}.parquet")
        _write_held(cache, {"units": keys, "columns": types})
    finally:
        for path in staged.values():
            path.unlink(missing_ok=True)
        shutil.rmtree(spill, ignore_errors=True)
    return rows


def _held(cache: Path, source: LandingSource) -> dict[str, Any] | None:
    """What the cache holds (``units.json``), if it holds every table of the source."""
    try:
        held = json.loads((cache / UNITS_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not all((cache / f"{t}.parquet").exists() for t in source.tables):
        return None
    return held if isinstance(held, dict) and "units" in held else None


def _write_held(cache: Path, held: dict[str, Any]) -> None:
    staging = cache / f".{UNITS_FILE}"
    staging.write_text(json.dumps(held))
    os.replace(staging, cache / UNITS_FILE)


def _parse_into(
    con: duckdb.DuckDBPyConnection,
    source: LandingSource,
    units: dict[str, Path],
    known: set[str],
    batch_rows: int,
) -> dict[str, list[str]]:
    """Parse the units not ``known`` into DuckDB temp tables, each row tagged with its unit and
    position; pandas holds one batch of about ``batch_rows`` rows per table at a time (a batch
    is concatenated as one frame, so its columns and dtypes unify as pandas does). The temp
    tables of each raw table are returned."""
    pending: dict[str, list[pd.DataFrame]] = {table: [] for table in source.tables}
    counted = dict.fromkeys(source.tables, 0)
    made: dict[str, list[str]] = {table: [] for table in source.tables}

    def flush(table: str) -> None:
        batch = f"fresh_{table}_{len(made[table])}"
        con.register("batch_rows", concat_frames(pending[table]))
        con.execute(f'CREATE TEMP TABLE "{batch}" AS SELECT * FROM batch_rows')
        con.unregister("batch_rows")
        made[table].append(batch)
        pending[table], counted[table] = [], 0

    for key, unit in units.items():
        if key in known:
            continue
        for table, frame in source.read_unit(unit).items():
            pending[table].append(frame.assign(**{_UNIT: key, _POSITION: range(len(frame))}))
            counted[table] += len(frame)
            if counted[table] >= batch_rows:
                flush(table)
    for table in source.tables:
        # a last batch of rows; or, when no unit gave any, one of empty frames: their columns
        if counted[table] or (pending[table] and not made[table]):
            flush(table)
    return made


def _typed(columns: list[list[str]]) -> str:
    """The columns cast to their types: Parquet keeps no ``TIMESTAMP_S``, the readers' dates."""
    return ", ".join(f'CAST("{c}" AS {t}) AS "{c}"' for c, t in columns)


def _stage(
    con: duckdb.DuckDBPyConnection,
    cached: Path,
    columns: list[list[str]] | None,
    fresh: list[str],
    target: Path,
) -> list[list[str]]:
    """Write ``target``: the cached rows of known units (typed as when they were loaded) and
    the ``fresh`` temp tables' rows, units in landing order and rows in unit order; the rows'
    columns and types (the unit and position columns left out) are returned."""
    parts = []
    if columns is not None:  # the cache's files and units.json are all there (``_held``)
        parts.append(
            f"SELECT {_typed(columns)}, {_UNIT}, {_POSITION} FROM read_parquet('{cached}') "
            f"WHERE {_UNIT} IN (SELECT unit FROM known_units)"
        )
    parts.extend(f'SELECT * FROM "{table}"' for table in fresh)
    if not parts:  # a source without any unit: DuckDB refuses a table without columns
        raise ValueError(f"no landing file to read into {target.stem.removeprefix('.staging-')}")
    union = " UNION ALL BY NAME ".join(f"({part})" for part in parts)
    described = con.execute(f"DESCRIBE {union}").fetchall()
    con.execute(
        f"COPY (SELECT rows.* FROM ({union}) rows JOIN unit_order o ON o.unit = rows.{_UNIT} "
        f"ORDER BY o.place, rows.{_POSITION}) TO '{target}' (FORMAT parquet)"
    )
    return [[name, kind] for name, kind, *_ in described if name not in (_UNIT, _POSITION)]
