"""A version as the API reads it: its datasets copied into native in-memory DuckDB tables,
sorted by their contract's key, as far as a memory budget allows; the rest read through the
version file's views (attached as ``VERSION_CATALOG``, where its part files are listed too).

A version file's datasets are views over Parquet part files, so that versions share the parts
of the rows they have in common on disk (``parts.py``). That layout is for storing versions, not
for answering: a query on a view reads Parquet on every request (a fundamentals page: 5.3 ms on
the view, 1.4 ms on a native table of the same rows, measured side by side on the small demo).
The API therefore serves from a copy in the layout a bare DuckDB server would choose. Copying
the small demo takes ~0.5 s and ~45 MB; the large demo's prices (13.6 M rows, ~3 GB) stay on
the views under the default budget, where the row store (``api/row_store.py``) answers the
common requests. The rows are the same, value for value and type for type: the copy is
``CREATE TABLE AS SELECT *`` of the view.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from pathlib import Path

import duckdb

from findata.contracts.datasets import dataset_names, load_dataset_contract
from findata.published.versions import PARTS_TABLE, attach_version

#: the catalog the version file is attached as
VERSION_CATALOG = "version"
#: bytes a value takes in a native in-memory table, at most, for the estimate made before
#: copying (measured on the small demo: ~16 bytes a value of prices, the widest dataset)
BYTES_PER_VALUE = 16


@dataclass(frozen=True)
class ServedCopy:
    """An open version: the connection requests read (its default catalog holds each dataset as
    a native table or a view of the version file) and what was copied."""

    connection: duckdb.DuckDBPyConnection
    #: datasets held as native in-memory tables
    copied: tuple[str, ...]
    #: datasets read through the version file's views (over the budget)
    viewed: tuple[str, ...]
    #: what the copied tables take in memory (DuckDB's own count)
    bytes: int

    @functools.cached_property
    def datasets(self) -> frozenset[str]:
        """Every dataset the version holds, copied or viewed (made once: each request's lease
        reads it)."""
        return frozenset(self.copied + self.viewed)


class CopyStopped(Exception):
    """The copy was stopped before it was complete (its worker is stopping)."""


def open_served_copy(
    path: Path, budget_bytes: int, stop: threading.Event | None = None
) -> ServedCopy:
    """The version file ``path`` attached read-only, each of its datasets copied into a native
    in-memory table sorted by its contract's key, the smallest first, while the estimate of the
    copies (rows x columns x ``BYTES_PER_VALUE``) stays within ``budget_bytes``; the datasets
    left over are views of the version file's. Every dataset has its name in the default
    catalog either way, so the API's SQL is the same. When ``stop`` is set, the copy ends
    before its next dataset with ``CopyStopped`` (a worker stopping waits for one dataset's
    copy at most, and its process never exits with DuckDB still copying in a thread)."""
    connection = duckdb.connect()
    try:
        attach_version(connection, path, VERSION_CATALOG)
        # parts never change once written: their Parquet footers can be kept between queries
        connection.execute("SET GLOBAL parquet_metadata_cache = true")
        sizes = _dataset_sizes(connection)
        copied, viewed, estimate = [], [], 0
        for name, values in sorted(sizes.items(), key=lambda item: (item[1], item[0])):
            if stop is not None and stop.is_set():
                raise CopyStopped(f"the copy of {path.name} was stopped")
            estimate += values * BYTES_PER_VALUE
            if estimate <= budget_bytes:
                connection.execute(
                    f'CREATE TABLE main."{name}" AS SELECT * FROM {VERSION_CATALOG}.main."{name}"'
                    + _key_order(name)
                )
                copied.append(name)
            else:
                connection.execute(
                    f'CREATE VIEW main."{name}" AS SELECT * FROM {VERSION_CATALOG}.main."{name}"'
                )
                viewed.append(name)
        ((held,),) = connection.execute(
            "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() "
            "WHERE tag = 'IN_MEMORY_TABLE'"
        ).fetchall()
    except BaseException:
        connection.close()
        raise
    return ServedCopy(connection, tuple(sorted(copied)), tuple(sorted(viewed)), int(held))


def _dataset_sizes(connection: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Each dataset of the attached version: its rows x its columns."""
    names = [
        name
        for (name,) in connection.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_catalog = ? AND table_schema = 'main' AND table_name <> ?",
            [VERSION_CATALOG, PARTS_TABLE],
        ).fetchall()
    ]
    sizes = {}
    for name in names:
        ((rows,),) = connection.execute(
            f'SELECT count(*) FROM {VERSION_CATALOG}.main."{name}"'
        ).fetchall()
        ((columns,),) = connection.execute(
            "SELECT count(*) FROM information_schema.columns "
            "WHERE table_catalog = ? AND table_schema = 'main' AND table_name = ?",
            [VERSION_CATALOG, name],
        ).fetchall()
        sizes[name] = int(rows) * int(columns)
    return sizes


def _key_order(name: str) -> str:
    """`` ORDER BY`` the dataset's contract key (the filters of its endpoints lead with it, and
    DuckDB's zone maps then skip the row groups of other entities); nothing for a table no
    contract names."""
    if name not in dataset_names():
        return ""
    return " ORDER BY " + ", ".join(f'"{column}"' for column in load_dataset_contract(name).key)
