"""Publishing: an immutable version, its change records and its event, exactly once.

Steps, in this order, under a lock that lets one publisher through at a time, on every host
(``lock.py``: a PostgreSQL advisory lock, a file lock on SQLite):

1. fingerprint every mart that has a contract, part by part (``parts.py``: a dataset
   is one part, or its history and its recent rows), in the build warehouse: a scan of the
   mart, or for an incremental mart built after the current version's build, that version's
   prints updated by the rows the build recomputed (``rebuilt_rows.py``);
2. if the fingerprints equal the current version's, nothing changed: publish nothing (no
   version, no record, no event);
3. otherwise write the parts no version holds yet (a part whose rows did not change is the file
   the current version reads), write ``published/.staging-<run>.duckdb`` (one view per dataset
   over its parts), diff each dataset against the current version (DuckDB, both attached: only
   the parts that differ, row by row, and of an incremental mart only the rows its build
   recomputed: the change records come from the incremental step), and rename the staging
   file to ``published/<label>.duckdb`` (the immutable version);
4. with ``FINDATA_PUBLISHED_URL`` set, upload the parts the bucket lacks, then the version file
   (``findata/published/bucket.py``; the published folder is the pipeline host's working copy,
   the current version fetched into it first if it lacks it);
5. in ONE control-plane transaction insert the version row, its change records and its
   ``data.changed`` event. The newest version row is the current version, so the version becomes
   current, and its records and event visible, in the same commit. The lock is held until that
   transaction has committed (on PostgreSQL it is taken by that very transaction), so
   change-record and event ids commit in the order they were drawn: a reader paging
   ``id > cursor`` cannot pass an id still to come.

A publish that fails before the rename (the disk full while writing a part, say) deletes the
staging files and what DuckDB wrote beside them (``.wal``, ``.tmp``) before the error goes on:
it leaves nothing but whole parts, and the current version keeps being served. A crash before
the commit leaves at most a version file (or staging file) that no row names, and parts no
version reads; they are never served, the next publish removes the version file, with its side
files, and publishes the same changes again (reusing the parts), and retention removes parts no
version reads, in the bucket too (an upload that fails removes what it uploaded; a crash
mid-upload leaves it to retention). Re-running is safe.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import secrets
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import sqlalchemy as sa

from findata.change_cursor import FEED_RETENTION, encode_change_cursor
from findata.clock import Clock, utc_seconds_text
from findata.contracts.datasets import DatasetContract, dataset_names, load_dataset_contract
from findata.control_plane import schema
from findata.control_plane.database import engine_for
from findata.published.bucket import (
    PublishedBucket,
    bucket_for,
    fetch_version,
)
from findata.published.lock import publish_lock
from findata.published.parts import (
    Part,
    parts_select,
    parts_updated_by_rebuilt_rows,
    plan_parts,
    read_parts,
    remove_database,
    table_print,
    write_missing_parts,
    write_version_file,
)
from findata.published.rebuilt_rows import rebuilt_rows_condition
from findata.published.versions import PARTS_DIR, attach_version, current_version, read_part_files
from findata.settings import Settings


@dataclass(frozen=True)
class ChangeRecord:
    """One entity (or index) of one dataset that the new version changed."""

    dataset: str
    scope: str
    entity: str
    change: str  # added, changed, removed, rebuild
    start: dt.date | None
    end: dt.date | None
    rows: int
    url: str | None


@dataclass(frozen=True)
class PublishResult:
    """What a publish did: a new version with its records and event, or nothing."""

    version: str | None
    version_id: int | None
    records: int
    event_id: str | None
    datasets: dict[str, dict[str, int]]
    #: datasets fingerprinted and diffed on the rows their incremental build recomputed alone
    from_rebuilt_rows: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """True when a new version was published."""
        return self.version is not None


def contracts_published() -> list[DatasetContract]:
    """Every dataset that has a contract, by name."""
    return [load_dataset_contract(name) for name in dataset_names()]


def _quoted(names: list[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def table_fingerprint(
    con: duckdb.DuckDBPyConnection, schema_name: str, contract: DatasetContract
) -> str:
    """The fingerprint of the contract's columns of table ``schema_name.<dataset>`` (a mart of
    the warehouse or a published table: equal rows give equal fingerprints)."""
    columns = _quoted(contract.column_names)
    count, digest = con.execute(
        f'SELECT count(*), bit_xor(hash(t)) FROM (SELECT {columns} FROM {schema_name}."'
        f'{contract.name}") t'
    ).fetchall()[0]
    return f"{count}:{digest}:{','.join(contract.column_names)}"


def content_hash(prints: dict[str, str]) -> str:
    """One hash of every table's fingerprint."""
    return hashlib.sha256(json.dumps(prints, sort_keys=True).encode()).hexdigest()


def _record_url(
    contract: DatasetContract, entity: str, start: dt.date | None, end: dt.date | None
) -> str | None:
    template = contract.change_feed.url_template
    if template is None:
        return None
    return template.format(
        entity=entity, start=start.isoformat() if start else "", end=end.isoformat() if end else ""
    )


def diff_dataset(
    con: duckdb.DuckDBPyConnection,
    contract: DatasetContract,
    new: str,
    old: str | None,
    *,
    rebuild: bool = False,
) -> list[ChangeRecord]:
    """Change records of one dataset: one per entity whose rows were added, changed or removed.

    ``new`` and ``old`` are the dataset's rows in the new and the current version, as SQL
    relations (the whole table, or the parts that differ). ``old`` None: every entity is added
    (a first version, or a dataset new to this one) or, with ``rebuild`` (its columns changed),
    rebuilt: every entity gets a ``rebuild`` record with open dates.
    """
    feed = contract.change_feed
    # a row naming no entity (an unmapped 13F CUSIP) is recorded under the empty entity
    entity = f"""coalesce(CAST("{feed.entity_column}" AS VARCHAR), '')"""
    day = f'"{feed.date_column}"' if feed.date_column else "CAST(NULL AS DATE)"
    key = _quoted(contract.key)
    select = f"SELECT {key}, {entity} AS entity, {day} AS day, hash(t) AS h FROM"
    new_rows = f"{select} {new} t"
    if old is None:
        rows = con.execute(
            f"SELECT entity, count(*), min(day), max(day) FROM ({new_rows}) GROUP BY entity "
            "ORDER BY entity"
        ).fetchall()
        return [
            ChangeRecord(
                contract.name,
                feed.scope,
                e,
                "rebuild" if rebuild else "added",
                None if rebuild else start,
                None if rebuild else end,
                n,
                _record_url(contract, e, None if rebuild else start, None if rebuild else end),
            )
            for e, n, start, end in rows
        ]
    old_rows = f"{select} {old} t"
    rows = con.execute(
        f"""
        SELECT coalesce(n.entity, o.entity) AS entity,
               count(*) FILTER (WHERE o.h IS NULL) AS added,
               count(*) FILTER (WHERE n.h IS NULL) AS removed,
               count(*) FILTER (WHERE o.h IS NOT NULL AND n.h IS NOT NULL) AS changed,
               min(coalesce(n.day, o.day)) AS start, max(coalesce(n.day, o.day)) AS "end"
        FROM ({new_rows}) n FULL OUTER JOIN ({old_rows}) o USING ({key})
        WHERE n.h IS DISTINCT FROM o.h
        GROUP BY 1 ORDER BY 1
        """
    ).fetchall()
    records = []
    for e, added, removed, changed, start, end in rows:
        kind = (
            "added"
            if added and not (removed or changed)
            else "removed"
            if removed and not (added or changed)
            else "changed"
        )
        records.append(
            ChangeRecord(
                contract.name,
                feed.scope,
                e,
                kind,
                start,
                end,
                added + removed + changed,
                _record_url(contract, e, start, end),
            )
        )
    return records


def dataset_records(
    con: duckdb.DuckDBPyConnection,
    contract: DatasetContract,
    parts: list[Part],
    *,
    has_current: bool,
    old_parts: list[Part] | None,
    rebuilt: str | None = None,
) -> list[ChangeRecord]:
    """The change records of one dataset between the version attached as ``new`` (its
    ``parts``) and, when ``has_current``, the current one attached as ``old`` (``old_parts``:
    its parts; None if it holds whole tables). Only the parts that differ are compared row by
    row when both versions split the dataset alike, and of them only the rows ``rebuilt``
    selects when given (the rows the incremental build recomputed: every other row is the
    same in both, ``rebuilt_rows.py``); a dataset with the fingerprint it had gives none."""
    name = contract.name
    new = f'"new".main."{name}"'
    if not has_current:
        return diff_dataset(con, contract, new, None)
    old_columns = _columns(con, "old", name)
    if old_columns != contract.column_names:
        return diff_dataset(con, contract, new, None, rebuild=bool(old_columns))
    old = f'"old".main."{name}"'
    if old_parts is None:  # a version written before parts: its table, whole
        if table_fingerprint(con, "old", contract) == table_print(contract, parts):
            return []
        return diff_dataset(con, contract, new, old)
    olds = [p for p in old_parts if p.dataset == name]
    if [p.file for p in olds] == [p.file for p in parts]:
        return []
    if [(p.name, p.since) for p in olds] != [(p.name, p.since) for p in parts]:
        return diff_dataset(con, contract, new, old)
    changed = [(n, o) for n, o in zip(parts, olds, strict=True) if n.file != o.file]
    where = "" if rebuilt is None else f" WHERE {rebuilt}"
    return diff_dataset(
        con,
        contract,
        f"({parts_select(contract, [n for n, _ in changed])}{where})",
        f"({parts_select(contract, [o for _, o in changed])}{where})",
    )


def _columns(con: duckdb.DuckDBPyConnection, catalog: str, table: str) -> list[str]:
    columns = con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_catalog = ? "
        "AND table_name = ? ORDER BY ordinal_position",
        [catalog, table],
    ).fetchall()
    return [c for (c,) in columns]


def data_through(
    con: duckdb.DuckDBPyConnection, contracts: list[DatasetContract], catalog: str
) -> dict[str, str | None]:
    """The last date each dataset of the version attached as ``catalog`` covers, as its
    contract's ``data_through`` says: the latest of its date columns, or another dataset's;
    None only for a dataset without rows."""
    result: dict[str, str | None] = {}
    for contract in contracts:
        columns = contract.data_through.columns
        if columns:
            latest = ", ".join(f'max("{column}")' for column in columns)
            ((last,),) = con.execute(
                f'SELECT greatest({latest}) FROM "{catalog}".main."{contract.name}"'
            ).fetchall()
            result[contract.name] = last.isoformat() if last else None
    for contract in contracts:
        if contract.data_through.same_as is not None:
            result[contract.name] = result[contract.data_through.same_as]
    return result


def _remove_unpublished_files(published: Path, known: set[str], keep: Path) -> None:
    """Delete version and staging files that no version row names (left by a crash before the
    commit), with their side files; a side file alone (its database already gone) too."""
    for entry in published.iterdir():
        database = published / entry.name.removesuffix(".wal").removesuffix(".tmp")
        if database.suffix == ".duckdb" and database.name not in known and database != keep:
            remove_database(database)


@contextlib.contextmanager
def _removed_on_failure(staging: Path, written: list[Path]) -> Iterator[None]:
    """Delete ``staging`` and the parts ``written`` (by this publish: no version reads them),
    with their side files, if the block fails, then let the error go on: a publish that failed
    because the disk is full must not leave files filling it."""
    try:
        yield
    except BaseException:
        for path in [staging, *written]:
            remove_database(path)
        raise


def _current_in_both(bucket: PublishedBucket, published: Path, file_name: str) -> None:
    """The current version in the working copy, where the diff reads it (fetched if another
    host published it, or this copy is new), and in the bucket, where the API hosts fetch it
    (uploaded if it was published before the bucket was set)."""
    if (published / file_name).exists() and file_name not in bucket.version_names():
        path = published / file_name
        _upload_version(bucket, published, path, read_part_files(path))
    fetch_version(bucket, published, file_name)


def _upload_version(
    bucket: PublishedBucket, published: Path, version_file: Path, files: list[str]
) -> None:
    """Upload the parts ``files`` the bucket lacks, then the version file: a version file in
    the bucket has its parts there. A failure removes what this call uploaded (so far as the
    bucket answers; retention removes what it could not) and goes on."""
    uploaded: list[str] = []
    try:
        for file in sorted(set(files) - bucket.names(f"{PARTS_DIR}/")):
            uploaded.append(file)  # before: an upload that fails half-way may have stored it
            bucket.upload(published / file, file)
        uploaded.append(version_file.name)
        bucket.upload(version_file, version_file.name)
    except BaseException:
        with contextlib.suppress(Exception):  # the upload's error is the one to report
            bucket.delete(uploaded)
        raise


def _event_payload(
    event_id: str,
    created: dt.datetime,
    run_id: str,
    records: list[ChangeRecord],
    first_id: int,
    last_id: int,
    base_url: str,
) -> dict[str, object]:
    counts: dict[str, Counter[str]] = {}
    for record in records:
        counts.setdefault(record.dataset, Counter())[record.change] += 1
    return {
        "id": event_id,
        "type": "data.changed",
        "created": utc_seconds_text(created),
        "run_id": run_id,
        "datasets": [
            {
                "dataset": name,
                **{k: counts[name][k] for k in ("added", "changed", "removed", "rebuild")},
            }
            for name in sorted(counts)
        ],
        "cursor_from": encode_change_cursor(first_id - 1),
        "cursor_to": encode_change_cursor(last_id),
        "changes_url": f"{base_url.rstrip('/')}/v1/changes",
    }


def publish(
    settings: Settings,
    *,
    run_id: str,
    clock: Clock,
    say: Callable[[str], None] | None = None,
    builds_on_current: bool = False,
) -> PublishResult:
    """Publish the build warehouse's marts as a new version if they changed (see module doc).
    ``say`` is told when another publisher holds the lock and this one waits for it.
    ``builds_on_current``: the warehouse held exactly the current version's rows before this
    run's build (the orchestration's ``comparable_version``), so an incremental mart's rebuilt
    rows are all that may differ from it; otherwise every mart is fingerprinted by a scan."""
    contracts = contracts_published()
    published = settings.published_dir
    engine = engine_for(settings.control_plane_url)
    published.mkdir(parents=True, exist_ok=True)
    bucket = bucket_for(settings)
    with publish_lock(settings, say=say) as lock:
        with engine.connect() as connection:
            current = current_version(connection)
            known = set(connection.execute(sa.select(schema.versions.c.file_name)).scalars())
        staging = published / f".staging-{run_id}.duckdb"
        _remove_unpublished_files(published, known, keep=staging)
        if bucket is not None and current is not None:
            _current_in_both(bucket, published, current.file_name)
        written: list[Path] = []
        with _removed_on_failure(staging, written), _publishing_connection(settings) as con:
            old_parts = None
            if current is not None:
                attach_version(con, published / current.file_name, "old")
                old_parts = read_parts(con, "old")
            rebuilt = _rebuilt_rows(con, contracts, old_parts) if builds_on_current else {}
            planned = {c.name: _planned_parts(con, c, old_parts, rebuilt) for c in contracts}
            parts = {name: found for name, (found, _) in planned.items()}
            # a mart fingerprinted by a scan is diffed by its parts whole
            rebuilt = {name: rebuilt[name] for name, (_, updated) in planned.items() if updated}
            digest = content_hash({c.name: table_print(c, parts[c.name]) for c in contracts})
            if current is not None and current.content_hash == digest:
                return PublishResult(None, None, 0, None, {})
            for contract in contracts:
                missing = [p for p in parts[contract.name] if not (published / p.file).exists()]
                written.extend(published / p.file for p in missing)  # before: a failure mid-way
                write_missing_parts(con, published, contract, _mart(contract), missing)
            remove_database(staging)
            write_version_file(
                staging, published, contracts, [p for c in contracts for p in parts[c.name]]
            )
            attach_version(con, staging, "new")
            records = [
                record
                for contract in contracts
                for record in dataset_records(
                    con,
                    contract,
                    parts[contract.name],
                    has_current=current is not None,
                    old_parts=old_parts,
                    rebuilt=rebuilt.get(contract.name),
                )
            ]
            through = data_through(con, contracts, "new")
            counts = {c.name: sum(p.rows for p in parts[c.name]) for c in contracts}
        if not records:
            # same rows, another fingerprint (a DuckDB upgrade can change its row hash): the
            # served data did not change, so nothing is published
            for path in [staging, *written]:
                remove_database(path)
            return PublishResult(None, None, 0, None, {})
        now = clock.now()
        label = f"{now:%Y%m%dT%H%M%S}Z-{run_id[:8]}"
        version_file = published / f"{label}.duckdb"
        os.replace(staging, version_file)
        if bucket is not None:
            files = sorted({p.file for c in contracts for p in parts[c.name]})
            with _removed_on_failure(version_file, []):
                _upload_version(bucket, published, version_file, files)
        event_id = "evt_" + secrets.token_hex(12)
        with lock.transaction() as connection:
            version_id = connection.execute(
                sa.insert(schema.versions).values(
                    label=label,
                    file_name=version_file.name,
                    run_id=run_id,
                    published_at=now,
                    content_hash=digest,
                    data_through=through,
                    row_counts=counts,
                )
            ).inserted_primary_key[0]
            ids = _insert_records(connection, version_id, records, now)
            payload = (
                _event_payload(event_id, now, run_id, records, ids[0], ids[-1], settings.base_url)
                if ids
                else None
            )
            if payload is not None:
                connection.execute(
                    sa.insert(schema.events).values(
                        event_id=event_id,
                        type="data.changed",
                        version_id=version_id,
                        payload=payload,
                        created_at=now,
                    )
                )
            connection.execute(
                sa.delete(schema.change_records).where(
                    schema.change_records.c.created_at < now - FEED_RETENTION
                )
            )
        summary = {
            d["dataset"]: {k: v for k, v in d.items() if k != "dataset"}
            for d in (payload or {}).get("datasets", [])
        }
        return PublishResult(
            label, version_id, len(records), event_id if payload else None, summary, sorted(rebuilt)
        )


def _mart(contract: DatasetContract) -> str:
    return f'build.marts."{contract.name}"'


def _rebuilt_rows(
    con: duckdb.DuckDBPyConnection,
    contracts: list[DatasetContract],
    old_parts: list[Part] | None,
) -> dict[str, str]:
    """Per incremental mart, the rows this build recomputed (``rebuilt_rows.py``), when the
    current version (attached as ``old``) has parts to keep the other rows from. Else none."""
    if old_parts is None:
        return {}
    conditions = {c.name: rebuilt_rows_condition(con, "build", "marts", c.name) for c in contracts}
    return {name: condition for name, condition in conditions.items() if condition is not None}


def _planned_parts(
    con: duckdb.DuckDBPyConnection,
    contract: DatasetContract,
    old_parts: list[Part] | None,
    rebuilt: dict[str, str],
) -> tuple[list[Part], bool]:
    """The new version's parts of the dataset: from the current version's prints and the rows
    the build recomputed when the mart says which (True), else from a scan of the mart."""
    if contract.name in rebuilt and old_parts is not None:
        served = [p for p in old_parts if p.dataset == contract.name]
        served_rows = f'"old".main."{contract.name}"'
        updated = parts_updated_by_rebuilt_rows(
            con, contract, _mart(contract), served, served_rows, rebuilt[contract.name]
        )
        if updated is not None:
            return updated, True
    return plan_parts(con, contract, _mart(contract)), False


@contextlib.contextmanager
def _publishing_connection(settings: Settings) -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory DuckDB with the build warehouse attached read-only, spilling beside the
    versions and held to the build's memory limit (a large sort of prices is the peak)."""
    spill = settings.published_dir / ".publish-spill"
    con = duckdb.connect(
        config={"memory_limit": settings.build_memory_limit, "temp_directory": str(spill)}
    )
    try:
        con.execute(f"ATTACH '{settings.warehouse_path}' AS build (READ_ONLY)")
        yield con
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)


def _insert_records(
    connection: sa.Connection, version_id: int, records: list[ChangeRecord], now: dt.datetime
) -> list[int]:
    """Insert the records in order; their ids (the feed cursor) are returned ascending."""
    table = schema.change_records
    if records:
        connection.execute(
            sa.insert(table),
            [
                {
                    "version_id": version_id,
                    "dataset": r.dataset,
                    "scope": r.scope,
                    "entity": r.entity,
                    "change": r.change,
                    "start": r.start,
                    "end": r.end,
                    "rows": r.rows,
                    "url": r.url,
                    "created_at": now,
                }
                for r in records
            ],
        )
    return list(
        connection.execute(
            sa.select(table.c.id).where(table.c.version_id == version_id).order_by(table.c.id)
        ).scalars()
    )
