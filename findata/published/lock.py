"""One publisher at a time, on one machine or on many.

On PostgreSQL the lock is a transaction-level advisory lock (``pg_advisory_xact_lock``) taken
by the control-plane transaction that later inserts the version, its change records and its
event: the lock is released by that transaction's commit and by nothing else. So ids
(``change_records.id``, ``events.id``) are drawn, and committed, one publisher after the
other: a reader paging ``id > cursor`` never passes an id that a slower transaction commits
later. Taking the lock in the committing transaction (rather than a session lock on a
connection of its own) also means a publisher whose connection dies has lost the lock and its
transaction together: it cannot commit after another publisher got in. Until its inserts the
transaction only reads, and on READ COMMITTED an idle transaction holds back no vacuum.

On SQLite (one machine) the lock is a file lock beside the versions, and the publish commits
in a transaction of its own before the lock is released; SQLite serialises writers anyway.

The second publisher waits: when it gets the lock it reads the current version again, so it
publishes nothing if the first one published the same content, or its own changes on top.
"""

from __future__ import annotations

import contextlib
import fcntl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import sqlalchemy as sa

from findata.control_plane.database import engine_for
from findata.settings import Settings

#: the advisory lock's key: "findpubl" in ASCII, one bigint shared by every findata host
PUBLISH_LOCK_KEY = int.from_bytes(b"findpubl", "big")


@dataclass
class PublishLock:
    """The lock, held; ``transaction`` is where the publish commits."""

    engine: sa.Engine
    #: on PostgreSQL, the connection whose open transaction holds the lock
    connection: sa.Connection | None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sa.Connection]:
        """The control-plane transaction that publishes, committed at the end of the block while
        the lock is still held (on PostgreSQL that commit is what releases it)."""
        if self.connection is None:
            with self.engine.begin() as connection:
                yield connection
            return
        yield self.connection
        self.connection.commit()
        self.connection = None  # released: the lock went with the commit


def _holder(connection: sa.Connection) -> str:
    """Who holds the lock, as PostgreSQL sees them (backend pid, client address, application)."""
    row = connection.execute(
        sa.text(
            "SELECT a.pid, a.client_addr, a.application_name FROM pg_locks l "
            "JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
            "AND l.classid = :high AND l.objid = :low "
            "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        ),
        {"high": PUBLISH_LOCK_KEY >> 32, "low": PUBLISH_LOCK_KEY & 0xFFFFFFFF},
    ).first()
    if row is None:
        return "another publisher"
    client = row.client_addr or "an address not shown (a local socket, or another role)"
    name = f", {row.application_name}" if row.application_name else ""
    return f"another publisher (PostgreSQL backend {row.pid}, from {client}{name})"


@contextlib.contextmanager
def publish_lock(
    settings: Settings, *, say: Callable[[str], None] | None = None
) -> Iterator[PublishLock]:
    """Hold the publish lock for the block (see the module doc). ``say`` is told when the lock
    is taken by another publisher and this one waits, and when it got it."""
    engine = engine_for(settings.control_plane_url)
    if engine.dialect.name != "postgresql":
        published = settings.published_dir
        published.mkdir(parents=True, exist_ok=True)
        with open(published / ".publish.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield PublishLock(engine, None)
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        return
    with engine.connect() as connection:
        key = {"key": PUBLISH_LOCK_KEY}
        if not connection.scalar(sa.text("SELECT pg_try_advisory_xact_lock(:key)"), key):
            if say is not None:
                say(f"waiting for the publish lock: {_holder(connection)} is publishing")
            started = time.monotonic()
            connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), key)
            if say is not None:
                say(f"got the publish lock after {time.monotonic() - started:.1f} s")
        lock = PublishLock(engine, connection)
        try:
            yield lock
        finally:
            if lock.connection is not None:  # not committed: the rollback releases the lock
                connection.rollback()
