"""A landing source read into its raw tables, parsing only the units not parsed before.

The readers parse a landing unit (a file, or a 13F folder) into pandas frames; the parsed rows
are kept in the pipeline's cache (``build/landing-cache/<source>/<table>[.<n>].parquet``, each
row tagged with its unit's key and its position in the unit) with ``units.json`` naming the
units the files hold, the files, the tables' column types, the load that wrote them and the
fingerprint of the code that parsed them (``reading_code_fingerprint``: a cache parsed by other
readers is not used, so a reader's new column reaches every row). A refresh parses the new and
changed units only. Every table is written with the columns and types of
``contracts/raw_tables.yaml`` (``raw.declared_rows``), whichever units are there: a source
without any unit gives empty tables of those columns, and a reader's column the contract lacks
is an error. Then either:

- **appended**: when the units held are the first units of landing, in the same order, the
  warehouse's raw tables are the ones this cache's last load wrote, and the held columns are
  the contract's (a new day's price file, say), the new rows are written to a file of their
  own beside the cached ones and inserted after the raw tables' rows: the order a merge would
  give, without rewriting what was there;
- **merged**: otherwise (a unit changed, was removed or sorts before a held one, or
  ``MAX_FILES`` files per table already), DuckDB merges the new rows with the cached ones of
  known units (units in landing order, rows in unit order), writes the raw tables from the
  result and the cache again as one file per table.

Written in this order, so that a crash anywhere leaves a cache that says no more than it holds:
the new Parquet files (staging names), the raw tables with the source's fingerprint and the
load's id (one transaction), the Parquet files renamed into place, then ``units.json``. Rows of
units and files ``units.json`` does not name are never taken from the cache (they are parsed
again), and a load whose id the warehouse does not hold is never appended to.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
from functools import cache as once
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

import findata.contracts
import findata.sources.readers
from findata.contracts.raw_tables import raw_table_columns
from findata.sources import landing as landing_module
from findata.sources.landing import LANDING_SOURCES, LandingSource, concat_frames, unit_key
from findata.sources.raw import (
    RAW_SCHEMA,
    cache_load,
    declared_rows,
    raw_transaction,
    typed_columns,
)

UNITS_FILE = "units.json"
#: parsed rows pandas holds per table before DuckDB takes them (a few hundred MB at most)
BATCH_ROWS = 1_000_000
#: files per table the cache keeps before a load merges them into one again
MAX_FILES = 32
_UNIT = "_landing_unit"
_POSITION = "_landing_position"


@once
def reading_code_fingerprint() -> str:
    """The contents of the code that turns landing files into rows: the readers, the landing
    sources (``landing.py``), the landing contracts and the raw tables' contract (the columns
    and types the rows are cast to)."""
    readers = Path(findata.sources.readers.__file__).parent
    contracts = Path(findata.contracts.__file__).parent
    files = [
        *sorted(readers.glob("*.py")),
        Path(landing_module.__file__),
        contracts / "landing.py",
        *sorted((contracts / "landing").glob("*.yaml")),
        contracts / "raw_tables.py",
        contracts / "raw_tables.yaml",
    ]
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.name}\0".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


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
    """Bring source ``name``'s raw tables in ``database`` to its landing units' rows, with its
    ``fingerprint``, parsing only the units ``cache`` does not hold (appended or merged: see
    the module doc); rows per table. DuckDB works within ``memory_limit``, spilling beside the
    cache beyond it; pandas holds the parsed rows of ``batch_rows`` at a time."""
    source = LANDING_SOURCES[name]
    units = {unit_key(unit): unit for unit in source.units(landing)}
    keys = list(units)
    held = _held(cache, source)
    known = set(held["units"]) & set(keys) if held else set()
    files: dict[str, list[str]] = held["files"] if held else {}
    staged = {table: cache / f".staging-{table}.parquet" for table in source.tables}
    spill = cache / ".spill"
    load = secrets.token_hex(8)
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
            fresh = _parse_into(con, name, units, known, batch_rows)
            appended = (
                held is not None
                and _appendable(held, keys, files, cache_load(database, name))
                and _stage_appended(con, held["columns"], fresh, staged)
            )
            if appended:
                types = held["columns"]
            else:
                types = {
                    table: _stage_merged(con, cache, table, held, fresh[table], staged[table])
                    for table in source.tables
                }
        written = [t for t in source.tables if staged[t].exists()]
        with raw_transaction(database, name, fingerprint, cache_load=load) as con:
            for table in written:
                # cast again: Parquet keeps no ``TIMESTAMP_S``, the readers' dates
                rows_of = (
                    f"SELECT {typed_columns(types[table])} FROM read_parquet('{staged[table]}')"
                )
                con.execute(
                    f'INSERT INTO {RAW_SCHEMA}."{table}" {rows_of}'
                    if appended
                    else f'CREATE OR REPLACE TABLE {RAW_SCHEMA}."{table}" AS {rows_of}'
                )
            rows = {
                table: con.execute(f'SELECT count(*) FROM {RAW_SCHEMA}."{table}"').fetchall()[0][0]
                for table in source.tables
            }
        new_files = _place_files(cache, source, files if appended else {}, staged, written)
        _write_held(
            cache,
            {
                "units": keys,
                "columns": types,
                "files": new_files,
                "load": load,
                "readers": reading_code_fingerprint(),
            },
        )
        if not appended:
            _remove_unlisted_files(cache, source, new_files)
    finally:
        for path in staged.values():
            path.unlink(missing_ok=True)
        shutil.rmtree(spill, ignore_errors=True)
    return rows


def _appendable(
    held: dict[str, Any], keys: list[str], files: dict[str, list[str]], loaded: str | None
) -> bool:
    """Whether the new units can be appended: the held units are landing's first, in order,
    the warehouse's raw tables are the held load's, and no table has ``MAX_FILES`` files."""
    units = held["units"]
    return (
        len(keys) > len(units)
        and keys[: len(units)] == units
        and loaded is not None
        and held.get("load") == loaded
        and all(len(names) < MAX_FILES for names in files.values())
    )


def _held(cache: Path, source: LandingSource) -> dict[str, Any] | None:
    """What the cache holds (``units.json``, its ``files`` filled in for a list written before
    files were), if the code reading landing is the one that parsed it and every file it names
    of every table of the source is there."""
    try:
        held = json.loads((cache / UNITS_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(held, dict) or "units" not in held:
        return None
    if held.get("readers") != reading_code_fingerprint():
        return None  # parsed by other readers: its rows may lack a column, or differ
    files = held.setdefault("files", {t: [f"{t}.parquet"] for t in source.tables})
    if sorted(files) != sorted(source.tables) or not all(
        (cache / name).exists() for names in files.values() for name in names
    ):
        return None
    return held


def _write_held(cache: Path, held: dict[str, Any]) -> None:
    staging = cache / f".{UNITS_FILE}"
    staging.write_text(json.dumps(held))
    os.replace(staging, cache / UNITS_FILE)


def _place_files(
    cache: Path,
    source: LandingSource,
    files: dict[str, list[str]],
    staged: dict[str, Path],
    written: list[str],
) -> dict[str, list[str]]:
    """Rename each written staging file into place: after ``files`` (appended) or as the
    table's one file (merged, ``files`` empty); each table's files are returned."""
    placed = {}
    for table in source.tables:
        names = list(files.get(table, []))
        if table in written:
            name = f"{table}.{len(names)}.parquet" if names else f"{table}.parquet"
            os.replace(staged[table], cache / name)
            names.append(name)
        placed[table] = names
    return placed


def _remove_unlisted_files(cache: Path, source: LandingSource, files: dict[str, list[str]]) -> None:
    """Delete the appended files a merge replaced (and any a crash left unlisted)."""
    for table in source.tables:
        for path in cache.glob(f"{table}.*.parquet"):
            if path.name not in files[table]:
                path.unlink(missing_ok=True)


def _parse_into(
    con: duckdb.DuckDBPyConnection,
    name: str,
    units: dict[str, Path],
    known: set[str],
    batch_rows: int,
) -> dict[str, list[str]]:
    """Parse the units not ``known`` into DuckDB temp tables, each row tagged with its unit and
    position; pandas holds one batch of about ``batch_rows`` rows per table at a time (a batch
    is concatenated as one frame, so its columns and dtypes unify as pandas does). The temp
    tables of each raw table are returned."""
    source = LANDING_SOURCES[name]
    pending: dict[str, list[tuple[str, pd.DataFrame]]] = {table: [] for table in source.tables}
    counted = dict.fromkeys(source.tables, 0)
    made: dict[str, list[str]] = {table: [] for table in source.tables}

    def flush(table: str) -> None:
        batch = f"fresh_{table}_{len(made[table])}"
        con.register("batch_rows", _tagged_batch(pending[table]))
        con.execute(f'CREATE TEMP TABLE "{batch}" AS SELECT * FROM batch_rows')
        con.unregister("batch_rows")
        made[table].append(batch)
        pending[table], counted[table] = [], 0

    for key, unit in units.items():
        if key in known:
            continue
        tables = source.read_unit(unit)
        for table, frame in tables.items():
            pending[table].append((key, frame))
            counted[table] += len(frame)
            if counted[table] >= batch_rows:
                flush(table)
    for table in source.tables:
        # a last batch of rows; or, when no unit gave any, one of empty frames: a column of
        # theirs the raw tables' contract lacks is refused all the same
        if counted[table] or (pending[table] and not made[table]):
            flush(table)
    return made


def _tagged_batch(frames: list[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    """The units' frames one after the other, each row tagged with its unit's key and its
    position in the unit (tagged once per batch: a copy of each unit's frame to tag it was most
    of the time a batch of Form 4s took, beyond parsing them)."""
    batch = concat_frames([frame for _, frame in frames])
    lengths = [len(frame) for _, frame in frames]
    starts = np.repeat(np.cumsum([0, *lengths])[:-1], lengths)
    keys = np.array([key for key, _ in frames], dtype=object)
    batch[_UNIT] = pd.Series(np.repeat(keys, lengths), dtype="str", index=batch.index)
    batch[_POSITION] = np.arange(len(batch), dtype="int64") - starts
    return batch


def _declared(table: str) -> list[list[str]]:
    """Raw ``table``'s columns and types as the contract declares them (as ``units.json``
    keeps them: lists)."""
    return [[column, kind] for column, kind in raw_table_columns()[table]]


def _union(
    con: duckdb.DuckDBPyConnection,
    table: str,
    cached: list[Path],
    columns: list[list[str]] | None,
    known_only: bool,
    fresh: list[str],
) -> tuple[str, list[list[str]]]:
    """The cached rows (of known units, or none) and the ``fresh`` temp tables' rows, as one
    SQL query of the contract's columns and types (``declared_rows``, which refuses a column
    the contract lacks) followed by the unit and position columns; with those columns and
    types (the unit and position columns left out). No part at all (a source without any
    unit) gives the contract's columns and no rows."""
    parts = []
    if columns is not None and cached:  # the cache's files and units.json are all there
        paths = ", ".join(f"'{path}'" for path in cached)
        where = f"{_UNIT} IN (SELECT unit FROM known_units)" if known_only else "false"
        parts.append(
            f"SELECT {typed_columns(columns)}, {_UNIT}, {_POSITION} FROM read_parquet([{paths}]) "
            f"WHERE {where}"
        )
    parts.extend(f'SELECT * FROM "{batch}"' for batch in fresh)
    union = declared_rows(con, table, parts, ((_UNIT, "VARCHAR"), (_POSITION, "BIGINT")))
    return union, _declared(table)


def _copy_in_landing_order(con: duckdb.DuckDBPyConnection, union: str, target: Path) -> None:
    con.execute(
        f"COPY (SELECT rows.* FROM ({union}) rows JOIN unit_order o ON o.unit = rows.{_UNIT} "
        f"ORDER BY o.place, rows.{_POSITION}) TO '{target}' (FORMAT parquet)"
    )


def _stage_merged(
    con: duckdb.DuckDBPyConnection,
    cache: Path,
    table: str,
    held: dict[str, Any] | None,
    fresh: list[str],
    target: Path,
) -> list[list[str]]:
    """Write ``target``: the cached rows of known units (typed as when they were loaded) and
    the ``fresh`` temp tables' rows of ``table``, units in landing order and rows in unit
    order; the rows' columns and types are returned."""
    files = [cache / name for name in held["files"][table]] if held else []
    columns = held["columns"].get(table) if held else None
    union, types = _union(con, table, files, columns, True, fresh)
    _copy_in_landing_order(con, union, target)
    return types


def _stage_appended(
    con: duckdb.DuckDBPyConnection,
    columns: dict[str, list[list[str]]],
    fresh: dict[str, list[str]],
    staged: dict[str, Path],
) -> bool:
    """Write each table's new rows to its staging file (none for a table without new rows),
    typed as a merge would type them (the contract's types), in landing order; False, writing
    nothing, when the held ``columns`` are not the contract's (a merge would change the raw
    table's columns or types)."""
    unions = {}
    for table, batches in fresh.items():
        if not _count(con, batches):
            continue
        # the cached rows add none here, and the contract types the new ones as a merge would
        union, types = _union(con, table, [], None, False, batches)
        if types != columns[table]:
            return False
        unions[table] = union
    for table, union in unions.items():
        _copy_in_landing_order(con, union, staged[table])
    return True


def _count(con: duckdb.DuckDBPyConnection, tables: list[str]) -> int:
    return sum(con.execute(f'SELECT count(*) FROM "{t}"').fetchall()[0][0] for t in tables)
