"""Two published versions compared dataset by dataset, every row and column exactly (EXCEPT
ALL both ways): a faster pipeline (an incremental refresh, say) must publish exactly the rows a
full rebuild of the same landing publishes. ``benchmarks/published_diff.py`` runs it on two
homes; the pipeline tests on a refreshed home and one rebuilt from scratch."""

from __future__ import annotations

from pathlib import Path

import duckdb

from findata.published.versions import PARTS_TABLE, attach_version


def published_differences(before: Path, after: Path) -> list[str]:
    """One line per table (its rows on each side and the rows only on one side); the lines
    that say how they differ come first. Empty differences: identical."""
    connection = duckdb.connect()
    attach_version(connection, before, "before")
    attach_version(connection, after, "after")
    old, new = _tables(connection, "before"), _tables(connection, "after")
    differences = [
        f"{table}: only in {'before' if table in old else 'after'}"
        for table in sorted(old.keys() ^ new.keys())
    ]
    for table in sorted(old.keys() & new.keys()):
        if old[table] != new[table]:
            differences.append(f"{table}: columns differ: {old[table]} vs {new[table]}")
            continue
        counts = [
            _count(connection, f"SELECT * FROM {side}.{table}") for side in ("before", "after")
        ]
        only = [
            _count(connection, f"SELECT * FROM {a}.{table} EXCEPT ALL SELECT * FROM {b}.{table}")
            for a, b in (("before", "after"), ("after", "before"))
        ]
        if counts[0] != counts[1] or only != [0, 0]:
            differences.append(
                f"{table}: rows {counts[0]} vs {counts[1]}; only before {only[0]}, "
                f"only after {only[1]}"
            )
    connection.close()
    return differences


def _count(connection: duckdb.DuckDBPyConnection, query: str) -> int:
    return connection.execute(f"SELECT count(*) FROM ({query})").fetchall()[0][0]


def _tables(connection: duckdb.DuckDBPyConnection, catalog: str) -> dict[str, list[str]]:
    rows = connection.execute(
        "SELECT table_schema || '.' || table_name, column_name FROM information_schema.columns "
        "WHERE table_catalog = ? AND table_name <> ? "
        "ORDER BY table_schema, table_name, ordinal_position",
        [catalog, PARTS_TABLE],
    ).fetchall()
    tables: dict[str, list[str]] = {}
    for table, column in rows:
        tables.setdefault(table, []).append(column)
    return tables
