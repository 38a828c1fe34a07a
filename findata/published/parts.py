"""The parts a new version reads its datasets from, written only where no equal part exists.

A dataset is one part (``all``) or, when its contract's ``storage.recent_year_of`` names a date
column, two: ``recent`` (rows from January 1 of that column's latest year) and ``history`` (the
rest, and rows without a date). Each part is fingerprinted in the build warehouse (its rows, the
XOR and the sum of their hashes) and stored in a file named for that fingerprint and the
contract's columns, so a part whose rows did not change is the file the current version
already reads: a refresh that adds a day writes the recent prices again, not twenty years of
them. The layout on disk is described in ``findata/published/versions.py``.

A version keeps each part's print (``digest`` and ``digest_sum`` in its parts table), so the
next build of an incremental mart is fingerprinted from those prints and the rows it recomputed
(``parts_updated_by_rebuilt_rows``): the count and the sum of the hashes less the rows removed
plus the rows added, the XOR of both; a day's bars, not the year's.
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
from findata.published.versions import PARTS_DIR, PARTS_TABLE, holds_parts_table, search_published

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
    #: the sum of the rows' hashes; None without rows, and in a version written before it was
    #: kept (the file's name is made from it)
    total: int | None = None


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
    return _fingerprinted_parts(con, contract, source, _split_date(con, contract, source))


def _split_date(
    con: duckdb.DuckDBPyConnection, contract: DatasetContract, source: str
) -> dt.date | None:
    """Where ``source``'s recent part starts: January 1 of its latest year (None: one part)."""
    column = contract.storage.recent_year_of
    if column is None:
        return None
    ((latest,),) = con.execute(f'SELECT max("{column}") FROM {source}').fetchall()
    return None if latest is None else dt.date(latest.year, 1, 1)


def unchanged_parts(
    con: duckdb.DuckDBPyConnection, contract: DatasetContract, source: str, served: list[Part]
) -> list[Part]:
    """The parts of ``served`` (a version's parts of the dataset) whose rows ``source`` holds
    exactly, split as they are split: one scan of the table."""
    since = served[0].since if served else None
    files = {p.name: p.file for p in _fingerprinted_parts(con, contract, source, since)}
    return [p for p in served if files.get(p.name) == p.file]


def parts_updated_by_rebuilt_rows(
    con: duckdb.DuckDBPyConnection,
    contract: DatasetContract,
    source: str,
    served: list[Part],
    served_source: str,
    rebuilt: str,
) -> list[Part] | None:
    """The parts of ``source`` (a mart, as SQL) found from the ``served`` parts of the version
    it was built after (``served_source``: that version's rows of the dataset, as SQL) and the
    rows the condition ``rebuilt`` selects on both sides: each part's print is the served one,
    less its rows rebuilt, plus the mart's rows rebuilt (counts and sums add, XORs cancel). It
    reads the rebuilt rows, not the whole mart, and is exact when every other row is the same
    on both sides (``rebuilt_rows.py``). None when it cannot: a served part without its sum (a
    version written before it was kept), or a split between history and recent that moved."""
    if not served or any(p.rows and p.total is None for p in served):
        return None
    since = served[0].since
    if _split_date(con, contract, source) != since:
        return None
    removed = _part_prints(con, contract, served_source, since, rebuilt)
    added = _part_prints(con, contract, source, since, rebuilt)
    parts = []
    for part in served:
        out_rows, out_digest, out_total = removed.get(part.name, (0, 0, 0))
        in_rows, in_digest, in_total = added.get(part.name, (0, 0, 0))
        rows = part.rows - out_rows + in_rows
        digest = total = None
        if rows:
            digest = (part.digest or 0) ^ (out_digest or 0) ^ (in_digest or 0)
            total = (part.total or 0) - (out_total or 0) + (in_total or 0)
        file = _file(contract, part.name, rows, digest, total)
        parts.append(Part(contract.name, part.name, since, rows, digest, file, total))
    return parts


def part_predicate(contract: DatasetContract, part: Part) -> str:
    """The rows of ``part``, as a SQL condition on the dataset's columns."""
    return _predicate(contract, part.name, part.since)


def _fingerprinted_parts(
    con: duckdb.DuckDBPyConnection, contract: DatasetContract, source: str, since: dt.date | None
) -> list[Part]:
    names = ["all"] if since is None else ["history", "recent"]
    found = _part_prints(con, contract, source, since)
    parts = []
    for name in names:
        rows, digest, total = found.get(name, (0, None, None))
        file = _file(contract, name, rows, digest, total)
        parts.append(Part(contract.name, name, since, rows, digest, file, total))
    return parts


def _part_prints(
    con: duckdb.DuckDBPyConnection,
    contract: DatasetContract,
    source: str,
    since: dt.date | None,
    where: str = "true",
) -> dict[str, tuple[int, int | None, int | None]]:
    """Per part of ``source``'s rows that ``where`` selects: their count, and the XOR and the
    sum of their hashes (parts without such rows left out)."""
    part = (
        "'all'"
        if since is None
        else (f"CASE WHEN {_predicate(contract, 'recent', since)} THEN 'recent' ELSE 'history' END")
    )
    return {
        name: (rows, digest, total)
        for name, rows, digest, total in con.execute(
            f"SELECT {part} AS part, count(*), bit_xor(hash(t)), sum(hash(t)::HUGEINT) FROM "
            f"(SELECT {_quoted(contract.column_names)} FROM {source} WHERE {where}) t GROUP BY 1"
        ).fetchall()
    }


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
            "row_count BIGINT, digest UBIGINT, file VARCHAR, digest_sum HUGEINT)"
        )
        con.executemany(
            f"INSERT INTO {PARTS_TABLE} VALUES (?, ?, ?, ?, ?, ?, ?)",
            [[p.dataset, p.name, p.since, p.rows, p.digest, p.file, p.total] for p in parts],
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
    ((kept_sums,),) = con.execute(
        "SELECT count(*) FROM information_schema.columns WHERE table_catalog = ? "
        "AND table_name = ? AND column_name = 'digest_sum'",
        [catalog, PARTS_TABLE],
    ).fetchall()
    total = "digest_sum" if kept_sums else "NULL"  # a version written before sums were kept
    rows = con.execute(
        f'SELECT dataset, part, since, row_count, digest, file, {total} FROM "{catalog}".main.'
        f"{PARTS_TABLE} ORDER BY dataset, part"
    ).fetchall()
    return [Part(*row) for row in rows]
