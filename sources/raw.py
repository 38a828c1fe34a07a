"""Raw tables: landing read by the real-format readers, stored as is in the build DuckDB.

Each landing source becomes tables ``raw.<table>`` (see ``findata.sources.landing``), replaced
whole when the source is read; dbt's staging models read them as sources. With the tables, in the
same transaction, the source's fingerprint (its files and the code that reads them) is kept in
``raw._landing_fingerprints``: a refresh whose fingerprint for a source is the one kept leaves
that source's tables as they are.

Every raw table has the columns of ``contracts/raw_tables.yaml``, in its order and cast to its
types, whichever files arrived (``declared_rows``): a source without any file gives empty
tables of those columns, and a reader giving a column the contract lacks is an error.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import duckdb
import pandas as pd

from findata.contracts.raw_tables import RAW_TABLES_FILE, raw_table_columns

RAW_SCHEMA = "raw"
FINGERPRINTS = f"{RAW_SCHEMA}._landing_fingerprints"
CACHE_LOADS = f"{RAW_SCHEMA}._landing_cache_loads"
"""Per source, the landing cache's load that wrote its tables (``landing_cache``); none when
they were written otherwise."""


def write_raw_tables(
    database: Path,
    tables: dict[str, pd.DataFrame],
    source: str | None = None,
    fingerprint: str | None = None,
) -> dict[str, int]:
    """Replace ``raw.<name>`` with each frame in one transaction, with ``source``'s
    ``fingerprint`` when given; returns rows per table. A table the raw-table contract declares
    gets its columns and types (``declared_rows``; a frame without columns, a source without
    files, gives an empty table); one it does not declare (a test's own) is the frame as is."""
    declared = raw_table_columns()
    with raw_transaction(database, source, fingerprint) as con:
        for name, frame in tables.items():
            # DuckDB refuses a frame without columns: the contract's empty table stands in
            parts = ["SELECT * FROM frame_to_load"] if len(frame.columns) else []
            if parts:
                con.register("frame_to_load", frame)
            rows = declared_rows(con, name, parts) if name in declared else parts[0]
            con.execute(f'CREATE OR REPLACE TABLE {RAW_SCHEMA}."{name}" AS {rows}')
            if parts:
                con.unregister("frame_to_load")
    return {name: len(frame) for name, frame in tables.items()}


def typed_columns(columns: Iterable[Sequence[str]]) -> str:
    """A select list of the ``(column, type)`` pairs, each cast to its type."""
    return ", ".join(f'CAST("{c}" AS {t}) AS "{c}"' for c, t in columns)


def declared_rows(
    con: duckdb.DuckDBPyConnection,
    table: str,
    parts: list[str],
    tags: Sequence[tuple[str, str]] = (),
) -> str:
    """The SQL of the rows of ``parts`` (queries, united by column name) as raw ``table`` is
    declared in ``contracts/raw_tables.yaml``: its columns in order, each cast to its type
    (null where no part has it), then the ``tags`` (column, type) the caller keeps beside them.
    No part gives no rows. A part's column that is neither declared nor a tag raises
    ``ValueError`` naming the table and the column."""
    columns = raw_table_columns().get(table)
    if columns is None:
        raise ValueError(f"raw table {table} is not declared in {RAW_TABLES_FILE.name}")
    columns = [*columns, *tags]
    # a part of every column typed and no row: the union has each column, whatever the parts
    nulls = ", ".join(f'CAST(NULL AS {t}) AS "{c}"' for c, t in columns)
    empty = f"SELECT {nulls} WHERE false"
    union = " UNION ALL BY NAME ".join(f"({part})" for part in [empty, *parts])
    names = {c for c, _ in columns}
    for found, *_ in con.execute(f"DESCRIBE {union}").fetchall():
        if found not in names:
            raise ValueError(
                f"raw table {table}: column {found!r} is not declared in {RAW_TABLES_FILE.name} "
                "(a reader gives it: declare it there, with its type)"
            )
    return f"SELECT {typed_columns(columns)} FROM ({union})"


@contextlib.contextmanager
def raw_transaction(
    database: Path,
    source: str | None = None,
    fingerprint: str | None = None,
    *,
    cache_load: str | None = None,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to the warehouse in one transaction that replaces raw tables and, when
    ``source`` is given, records its ``fingerprint`` (or forgets it, for None) and the landing
    cache's load that wrote them (``cache_load``; None: not the cache) as it commits."""
    database.parent.mkdir(parents=True, exist_ok=True)
    with duckdb.connect(str(database)) as con:
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {RAW_SCHEMA}")
        for table, column in ((FINGERPRINTS, "fingerprint"), (CACHE_LOADS, "cache_load")):
            con.execute(
                f"CREATE TABLE IF NOT EXISTS {table} (source VARCHAR PRIMARY KEY, "
                f"{column} VARCHAR NOT NULL)"
            )
        con.execute("BEGIN TRANSACTION")
        yield con
        if source is not None:
            for table, value in ((FINGERPRINTS, fingerprint), (CACHE_LOADS, cache_load)):
                con.execute(f"DELETE FROM {table} WHERE source = ?", [source])
                if value is not None:
                    con.execute(f"INSERT INTO {table} VALUES (?, ?)", [source, value])
        con.execute("COMMIT")


def forget_landing_fingerprints(database: Path) -> None:
    """Every source is read again on the next run (a forced build starts from landing), its
    raw tables written whole."""
    if database.exists():
        with duckdb.connect(str(database)) as con:
            con.execute(f"DROP TABLE IF EXISTS {FINGERPRINTS}")
            con.execute(f"DROP TABLE IF EXISTS {CACHE_LOADS}")


def cache_load(database: Path, source: str) -> str | None:
    """The landing cache's load that wrote ``source``'s raw tables; None when unknown."""
    if not database.exists():
        return None
    with duckdb.connect(str(database), read_only=True) as con:
        return _kept(con, CACHE_LOADS, "cache_load").get(source)


def landing_fingerprints(database: Path) -> dict[str, str]:
    """Each source's fingerprint as kept beside its tables (empty before any was read)."""
    if not database.exists():
        return {}
    with duckdb.connect(str(database), read_only=True) as con:
        return _kept(con, FINGERPRINTS, "fingerprint")


def unchanged_raw_tables(
    database: Path, source: str, fingerprint: str, tables: tuple[str, ...]
) -> dict[str, int] | None:
    """Rows per table of ``source`` when the warehouse holds its tables read with this very
    ``fingerprint``; None when the source must be read."""
    if not database.exists():
        return None
    with duckdb.connect(str(database), read_only=True) as con:
        if (
            not set(tables) <= _raw_tables(con)
            or _kept(con, FINGERPRINTS, "fingerprint").get(source) != fingerprint
        ):
            return None
        return {
            name: con.execute(f'SELECT count(*) FROM {RAW_SCHEMA}."{name}"').fetchall()[0][0]
            for name in tables
        }


def _raw_tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {
        name
        for (name,) in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = ?",
            [RAW_SCHEMA],
        ).fetchall()
    }


def _kept(con: duckdb.DuckDBPyConnection, table: str, column: str) -> dict[str, str]:
    """Each source's ``column`` in ``table`` (one of the per-source tables above), if it
    exists."""
    if table.split(".", 1)[1] not in _raw_tables(con):
        return {}
    return dict(con.execute(f"SELECT source, {column} FROM {table}").fetchall())
