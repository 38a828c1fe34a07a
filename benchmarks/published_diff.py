"""Compare the current published versions of two FINDATA_HOMEs table by table, every row and
column exactly (EXCEPT ALL both ways): a refactor or a faster pipeline must change no row.

    .venv/bin/python benchmarks/published_diff.py /tmp/home-before /tmp/home-after

Prints one line per table and IDENTICAL or DIFFERENT; exits 1 when they differ. Build both homes
on the same day and seed (``faketime DAY findata demo --no-serve``), or their as_of differs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb


def newest_version(home: Path) -> Path:
    """The newest published file of ``home`` (labels sort by time)."""
    return sorted((home / "published").glob("*.duckdb"))[-1]


def _tables(connection: duckdb.DuckDBPyConnection, catalog: str) -> dict[str, list[str]]:
    rows = connection.execute(
        "select table_schema || '.' || table_name, column_name from information_schema.columns "
        "where table_catalog = ? order by table_schema, table_name, ordinal_position",
        [catalog],
    ).fetchall()
    tables: dict[str, list[str]] = {}
    for table, column in rows:
        tables.setdefault(table, []).append(column)
    return tables


def compare(before: Path, after: Path) -> bool:
    """Print the comparison of two published files; True when every table is identical."""
    connection = duckdb.connect()
    connection.execute(f"attach '{before}' as before (read_only)")
    connection.execute(f"attach '{after}' as after (read_only)")
    old, new = _tables(connection, "before"), _tables(connection, "after")
    same = old.keys() == new.keys()
    for table in sorted(old.keys() ^ new.keys()):
        print(f"{table}: only in {'before' if table in old else 'after'}")
    for table in sorted(old.keys() & new.keys()):
        if old[table] != new[table]:
            print(f"{table}: columns differ: {old[table]} vs {new[table]}")
            same = False
            continue
        counts = [
            connection.execute(f"select count(*) from {side}.{table}").fetchone()[0]  # type: ignore[index]
            for side in ("before", "after")
        ]
        only = [
            connection.execute(
                f"select count(*) from (select * from {a}.{table} except all "
                f"select * from {b}.{table})"
            ).fetchone()[0]  # type: ignore[index]
            for a, b in (("before", "after"), ("after", "before"))
        ]
        print(
            f"{table}: rows {counts[0]} vs {counts[1]}; only before {only[0]}, only after {only[1]}"
        )
        same = same and counts[0] == counts[1] and only == [0, 0]
    print("IDENTICAL" if same else "DIFFERENT")
    return same


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    homes = [Path(arg) for arg in sys.argv[1:]]
    sys.exit(0 if compare(*(newest_version(home) for home in homes)) else 1)
