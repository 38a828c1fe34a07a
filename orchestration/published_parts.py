"""The parts a new version reads its datasets from, written only where no equal part exists.

A dataset is one part (``all``) or, when its contract's ``storage.recent_year_of`` names a date
column, two: ``recent`` (rows from January 1 of that column's latest year) and ``history`` (the
rest, and rows without a date). Each part is fingerprinted in the build warehouse (its rows, the
XOR and the sum of their hashes) and stored in a file named for that fingerprint and the
contract's columns, so a part whose rows did not change is the file the current version
already reads: a refresh that adds a day writes the recent prices again, not twenty years of
them. The layout on disk is described in ``findata/published.py``.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import operator
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

import duckdb

from findata.contracts.datasets import DatasetContract
from findata.published import PARTS_DIR, PARTS_TABLE, holds_parts_table, search_published

ROW_GROUP_ROWS = 16_384
"""Rows per Parquet row group of a part. Rows are in key order, so a query for one entity reads
the few groups whose key range holds it: with DuckDB's default (122,880) one entity's prices
took 2.2x as long to read on the small demo (``benchmarks/published_reads.py``)."""


@dataclass(frozen=True)
class Part:
    """One part of one dataset in one version."""

    dataset: str
    name: str  # all, history or recent
    since: dt.date | None  # where recent starts and history ends; None for ``all``
    rows: int
    digest: int | None  # XOR of the rows' hashes; None without rows
    file: str  # relative to the published folder


def parts_select(contract: DatasetContract, parts: list[Part]) -> str:
    """A SELECT of the dataset's rows in ``parts`` (one or more), the contract's columns, their
    files found through the published folder's search path: a version's view, or a diff's side."""
    files = ", ".join(f"'{p.file}'" for p in parts)
    return f"SELECT {_quoted(contract.column_names)} FROM read_parquet([{files}])"


def _quoted(names: list[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def _predicate(contract: DatasetContract, name: str, since: dt.date | None) -> str:
    column = contract.storage.recent_year_of
    if name == "all" or column is None or since is None:
        return "true"
    recent = f"\"{column}\" >= DATE '{since.isoformat()}'"
    return recent if name == "recent" else f"({recent}) IS NOT TRUE"


def _file(
    contract: DatasetContract, name: str, rows: int, digest: int | None, total: int | None
) -> str:
    """The part's file, named for its content: its rows' count, the XOR and the sum of their
    hashes (two rows' changes that cancel in one do not in the other), and the columns."""
    columns = ",".join(f"{c.name} {c.type}" for c in contract.columns)
    content = hashlib.sha256(f"{contract.name}|{name}|{rows}|{digest}|{total}|{columns}".encode())
    return f"{PARTS_DIR}/{contract.name}__{name}__{content.hexdigest()[:24]}.parquet"


def plan_parts(
    con: duckdb.DuckDBPyConnection, contract: DatasetContract, source: str
) -> list[Part]:
    """The parts of the dataset whose rows are the contract's columns of ``source`` (a table,
    as SQL), each with its fingerprint and file name: one scan of the table."""
    column = contract.storage.recent_year_of
    since = None
    if column is not None:
        ((latest,),) = con.execute(f'SELECT max("{column}") FROM {source}').fetchall()
        since = None if latest is None else dt.date(latest.year, 1, 1)
    return _fingerprinted_parts(con, contract, source, since)


def unchanged_parts(
    con: duckdb.DuckDBPyConnection, contract: DatasetContract, source: str, served: list[Part]
) -> list[Part]:
    """The parts of ``served`` (a version's parts of the dataset) whose rows ``source`` holds
    exactly, split as they are split: one scan of the table."""
    since = served[0].since if served else None
    files = {p.name: p.file for p in _fingerprinted_parts(con, contract, source, since)}
    return [p for p in served if files.get(p.name) == p.file]


def part_predicate(contract: DatasetContract, part: Part) -> str:
    """The rows of ``part``, as a SQL condition on the dataset's columns."""
    return _predicate(contract, part.name, part.since)


def _fingerprinted_parts(
    con: duckdb.DuckDBPyConnection, contract: DatasetContract, source: str, since: dt.date | None
) -> list[Part]:
    names = ["all"] if since is None else ["history", "recent"]
    part = (
        "'all'"
        if since is None
        else (f"CASE WHEN {_predicate(contract, 'recent', since)} THEN 'recent' ELSE 'history' END")
    )
    found = {
        name: (rows, digest, total)
        for name, rows, digest, total in con.execute(
            f"SELECT {part} AS part, count(*), bit_xor(hash(t)), sum(hash(t)::HUGEINT) FROM "
            f"(SELECT {_quoted(contract.column_names)} FROM {source}) t GROUP BY 1"
        ).fetchall()
    }
    parts = []
    for name in names:
        rows, digest, total = found.get(name, (0, None, None))
        parts.append(
            Part(
                contract.name, name, since, rows, digest, _file(contract, name, rows, digest, total)
            )
        )
    return parts


def table_print(contract: DatasetContract, parts: list[Part]) -> str:
    """The dataset's fingerprint from its parts: what ``publish.table_fingerprint`` gives for
    the same rows (the row count, the XOR of the row hashes, the columns)."""
    rows = sum(p.rows for p in parts)
    digests = [p.digest for p in parts if p.digest is not None]
    digest = functools.reduce(operator.xor, digests) if digests else None
    return f"{rows}:{digest}:{','.join(contract.column_names)}"


def write_missing_parts(
    con: duckdb.DuckDBPyConnection,
    published: Path,
    contract: DatasetContract,
    source: str,
    parts: list[Part],
) -> list[Part]:
    """Write each part whose file does not exist yet from ``source`` (rows in key order, as a
    file of its own renamed into place when complete); the parts written are returned."""
    (published / PARTS_DIR).mkdir(parents=True, exist_ok=True)
    written = []
    for part in parts:
        target = published / part.file
        if target.exists():
            continue
        staging = target.with_name(f".staging-{secrets.token_hex(6)}-{target.name}")
        try:
            con.execute(
                f"COPY (SELECT {_quoted(contract.column_names)} FROM {source} "
                f"WHERE {_predicate(contract, part.name, part.since)} "
                f"ORDER BY {_quoted(contract.key)}) TO '{staging}' "
                f"(FORMAT parquet, ROW_GROUP_SIZE {ROW_GROUP_ROWS})"
            )
            os.replace(staging, target)
        finally:
            staging.unlink(missing_ok=True)  # nothing once renamed; a half-written file otherwise
        written.append(part)
    return written


def remove_database(path: Path) -> None:
    """Delete a DuckDB file and what DuckDB writes beside it: its WAL and its spill directory."""
    path.unlink(missing_ok=True)
    Path(f"{path}.wal").unlink(missing_ok=True)
    shutil.rmtree(f"{path}.tmp", ignore_errors=True)


def write_version_file(
    path: Path, published: Path, contracts: list[DatasetContract], parts: list[Part]
) -> None:
    """The version file at ``path``: the table of its parts and one view per dataset over them."""
    with duckdb.connect(str(path)) as con:
        search_published(con, published)  # the views are bound (their parts read) when created
        con.execute(
            f"CREATE TABLE {PARTS_TABLE} (dataset VARCHAR, part VARCHAR, since DATE, "
            "row_count BIGINT, digest UBIGINT, file VARCHAR)"
        )
        con.executemany(
            f"INSERT INTO {PARTS_TABLE} VALUES (?, ?, ?, ?, ?, ?)",
            [[p.dataset, p.name, p.since, p.rows, p.digest, p.file] for p in parts],
        )
        for contract in contracts:
            mine = [p for p in parts if p.dataset == contract.name]
            con.execute(f'CREATE VIEW "{contract.name}" AS {parts_select(contract, mine)}')
        con.execute("CHECKPOINT")


def read_parts(con: duckdb.DuckDBPyConnection, catalog: str) -> list[Part] | None:
    """The parts of the version attached as ``catalog``; None for a version that holds its
    tables itself (written before parts existed)."""
    if not holds_parts_table(con, catalog):
        return None
    rows = con.execute(
        f'SELECT dataset, part, since, row_count, digest, file FROM "{catalog}".main.'
        f"{PARTS_TABLE} ORDER BY dataset, part"
    ).fetchall()
    return [Part(*row) for row in rows]
