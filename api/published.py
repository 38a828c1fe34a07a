"""The published data the API serves: the current version (newest ``versions`` row) and, per
version, one DuckDB connection shared by requests: the version file attached read-only, its
datasets copied into native in-memory tables within a budget (``published/served_copy.py``).

A new version is picked up on the next request, without a restart (with ``FINDATA_PUBLISHED_URL``
set, once this host has fetched it from the bucket: the version before is served meanwhile,
``findata/published/fetching.py``); a request (or a cursor) that
began on an older version keeps reading that version's immutable file. Each request leases a
cursor of its own (``lease``) and releases it when done. A version that is no longer current is
closed once no lease is out on it and it has been idle for ``idle`` (or when more than
``KEEP_OLD_VERSIONS`` old versions are open): a long-running worker holds the current version
and the few still being paged through, not every version it ever served.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from dataclasses import dataclass
from pathlib import Path

import duckdb
import sqlalchemy as sa

from findata.api.resolution import SubjectDirectory
from findata.api.row_store import RowStore
from findata.change_cursor import encode_change_cursor
from findata.clock import Clock, SystemClock
from findata.control_plane import schema
from findata.control_plane.raw_reads import RawRead
from findata.published.fetching import VersionFetches
from findata.published.served_copy import CopyStopped, ServedCopy, open_served_copy
from findata.published.versions import current_version

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Version:
    """A published version as the API needs it."""

    id: int
    label: str
    path: Path
    published_at: dt.datetime
    data_through: dict[str, str | None]
    row_counts: dict[str, int]


#: old versions kept open at most, idle or not (the least recently used are closed first)
KEEP_OLD_VERSIONS = 2


@dataclass
class _OpenVersion:
    copy: ServedCopy
    directory: SubjectDirectory
    last_used: dt.datetime
    leases: int = 0


class Lease:
    """A request's hold on a version, until ``release``: the version stays open, and the
    request's own cursor on it (DuckDB cursors are per thread) is made on first use (an answer
    from the cache or the row store needs none)."""

    def __init__(
        self,
        owner: PublishedData,
        label: str,
        copy: ServedCopy,
        directory: SubjectDirectory,
    ) -> None:
        self.directory = directory  # the version's entities and tickers, in memory
        self.datasets = copy.datasets  # the datasets the version holds
        self._connection = copy.connection
        self._cursor: duckdb.DuckDBPyConnection | None = None
        self._owner = owner
        self._label = label
        self._released = False

    @property
    def cursor(self) -> duckdb.DuckDBPyConnection:
        """The request's cursor on the version."""
        if self._cursor is None:
            self._cursor = self._connection.cursor()
        return self._cursor

    def release(self) -> None:
        """Close the cursor and hand the version back (once; later calls do nothing)."""
        if not self._released:
            self._released = True
            if self._cursor is not None:
                self._cursor.close()
            self._owner._returned(self._label)


class PublishedData:
    """Versions of the control plane at ``engine``, files under ``published_dir``."""

    def __init__(
        self,
        engine: sa.Engine,
        published_dir: Path,
        clock: Clock | None = None,
        idle: dt.timedelta = dt.timedelta(seconds=60),
        row_store: RowStore | None = None,
        fetches: VersionFetches | None = None,
        served_copy_bytes: int = 0,
    ) -> None:
        self.engine = engine
        #: the host's copy of the bucket's versions (None: the published folder is the store)
        self.fetches = fetches
        #: rows of open versions kept in memory (``api/row_store.py``; off unless given)
        self.row_store = row_store or RowStore(0)
        #: memory each open version's native copies may take (``published/served_copy.py``)
        self.served_copy_bytes = served_copy_bytes
        self.published_dir = published_dir
        self._clock = clock or SystemClock()
        self._idle = idle
        self._open: dict[str, _OpenVersion] = {}
        self._current_label: str | None = None
        self._current: Version | None = None
        self._newest_id = RawRead(engine, sa.select(sa.func.max(schema.versions.c.id)))
        self._change_cursors: dict[int, str] = {}
        self._lock = threading.Lock()
        #: one per version being opened: its copy is made once, outside ``_lock``
        self._opening: dict[str, threading.Lock] = {}
        #: set by ``close``: copies being made end, and no version opens any more
        self._stopping = threading.Event()
        self._warming: set[threading.Thread] = set()

    def current(self, newest_id: int | None = None) -> Version | None:
        """The current version, or None before the first publish.

        Asked of the control plane on every call (a version published a moment ago is served
        by every worker from the next request), as the newest id alone through the DBAPI
        cursor, unless the caller read it during its request (``newest_id``: a data request
        reads it with its key, in one round trip); the version's row is read when that id is
        not the one read last time. A version this host has yet to fetch from the bucket is
        fetched in the background while the version before is served (waited for when there is
        none)."""
        newest = newest_id
        if newest is None:
            (newest,) = self._newest_id.first() or (None,)
        if newest is None:
            return None
        held = self._current
        if held is not None and held.id == newest:
            return held
        with self.engine.connect() as connection:
            row = current_version(connection)
        if row is None:
            return None
        version = self._version(row)
        if self.fetches is not None and not version.path.exists():
            if held is not None:
                self.fetches.start(row.file_name)
                return held
            if self.fetches.wait(row.file_name) is None:
                return None  # retention removed it since the read: as before any version
        with self._lock:
            self._current = version
            switched = row.label != self._current_label
            if switched:
                self._current_label = row.label
                self._close_unused()
        if switched and held is not None:
            self.warm_in_background(version)
        return version

    def by_label(self, label: str) -> Version | None:
        """The version called ``label`` if it is still on record."""
        versions = schema.versions
        with self.engine.connect() as connection:
            row = connection.execute(sa.select(versions).where(versions.c.label == label)).first()
        if row is None:
            return None
        if not (self.published_dir / row.file_name).exists() and (
            self.fetches is None or self.fetches.wait(row.file_name) is None
        ):
            return None  # removed by retention (a cursor issued on another host may ask)
        return self._version(row)

    def change_cursor(self, version: Version) -> str:
        """Where a client of ``version``'s data starts the change feed: after the last record
        of that version or an earlier one (read once per version: a published version's
        records never change, and later ones get higher ids)."""
        cursor = self._change_cursors.get(version.id)
        if cursor is None:
            records = schema.change_records
            with self.engine.connect() as connection:
                last = connection.execute(
                    sa.select(sa.func.max(records.c.id)).where(records.c.version_id <= version.id)
                ).scalar_one()
            cursor = self._change_cursors[version.id] = encode_change_cursor(last or 0)
        return cursor

    def lease(self, version: Version) -> Lease:
        """A cursor of its own on ``version``, opening the version (its served copy) if it is
        not open; release it when the request is done. Requests for a version being opened
        wait for it; requests for versions already open go on meanwhile."""
        with self._lock:
            lease = self._lease_open(version.label)
            if lease is not None:
                return lease
            opening = self._opening.setdefault(version.label, threading.Lock())
        with opening:
            with self._lock:
                lease = self._lease_open(version.label)
            if lease is not None:
                return lease
            if self._stopping.is_set():
                raise CopyStopped(f"{version.label}: the published data is closed")
            copy = open_served_copy(version.path, self.served_copy_bytes, self._stopping)
            try:
                with copy.connection.cursor() as cursor:
                    directory = SubjectDirectory.load(cursor)
            except BaseException:
                copy.connection.close()
                raise
            with self._lock:
                if self._stopping.is_set():  # closed while this copy was made: not kept
                    copy.connection.close()
                    raise CopyStopped(f"{version.label}: the published data is closed")
                self._open[version.label] = _OpenVersion(
                    copy, directory, last_used=self._clock.now()
                )
                self._opening.pop(version.label, None)
                lease = self._lease_open(version.label)
            assert lease is not None
            return lease

    def warm_in_background(self, version: Version | None = None) -> threading.Thread:
        """Open ``version`` (the current one when None) in a thread of its own, so that the
        first requests of a new version (or of a worker that just started) find its served
        copy made; they wait for it if they come first. A failure only leaves the opening to
        the first request (and is logged). ``close`` stops and waits for it."""

        def warm() -> None:
            try:
                target = version or self.current()
                if target is not None:
                    self.lease(target).release()
            except CopyStopped:
                pass
            except Exception as error:  # the first request opens it, or says why it cannot
                log.info("warming the published version failed: %s", error)
            finally:
                with self._lock:
                    self._warming.discard(threading.current_thread())

        thread = threading.Thread(target=warm, name="findata-version-warm", daemon=True)
        with self._lock:
            self._warming.add(thread)
        thread.start()
        return thread

    def served_copy(self, label: str) -> ServedCopy | None:
        """The open version ``label``'s served copy (None when this worker has it closed)."""
        with self._lock:
            entry = self._open.get(label)
        return entry.copy if entry is not None else None

    def open_labels(self) -> set[str]:
        """The versions this worker holds a connection to."""
        with self._lock:
            return set(self._open)

    def close(self) -> None:
        """Close every version this worker holds (the app stops, its requests done), once the
        versions being warmed have stopped: a process must not exit while DuckDB copies in one
        of its threads (the C++ runtime aborts it, and the worker exits with an error)."""
        self._stopping.set()
        with self._lock:
            warming = list(self._warming)
        for thread in warming:
            thread.join()
        with self._lock:
            for label, entry in self._open.items():
                entry.copy.connection.close()
                self.row_store.drop_version(label)
            self._open.clear()

    def _lease_open(self, label: str) -> Lease | None:
        """A lease on the open version ``label``, or None when it is not open (``_lock`` is
        held)."""
        entry = self._open.get(label)
        if entry is None:
            return None
        entry.leases += 1
        return Lease(self, label, entry.copy, entry.directory)

    def _returned(self, label: str) -> None:
        with self._lock:
            entry = self._open[label]
            entry.leases -= 1
            entry.last_used = self._clock.now()
            self._close_unused()

    def _close_unused(self) -> None:
        """Close old versions nobody reads: those idle too long, then the least recently used
        beyond ``KEEP_OLD_VERSIONS`` (the lock is held)."""
        now = self._clock.now()
        unused = sorted(
            (
                (entry.last_used, label)
                for label, entry in self._open.items()
                if label != self._current_label and entry.leases == 0
            ),
            reverse=True,
        )
        for rank, (last_used, label) in enumerate(unused):
            if now - last_used >= self._idle or rank >= KEEP_OLD_VERSIONS:
                self._open.pop(label).copy.connection.close()
                self.row_store.drop_version(label)

    def _version(self, row: sa.Row) -> Version:
        return Version(
            id=row.id,
            label=row.label,
            path=self.published_dir / row.file_name,
            published_at=row.published_at,
            data_through=dict(row.data_through),
            row_counts=dict(row.row_counts),
        )
