"""Usage written to the control plane in batches: what counters that live outside the database
(this process's memory, Redis) added since the last write, written in one transaction by a
background thread every ``interval`` seconds.

A crash (SIGKILL, power loss) loses what was added since the last write: at most ``interval``
plus one write's time. A write that fails (the database restarting) keeps its batch for the
next try, so an outage delays usage but does not lose it while the process lives; a clean stop
tries for a few seconds more, then logs what it could not write.

Each batch is numbered in its process's sequence, and its transaction also moves that
process's row of ``usage_writes`` to the number: a batch whose commit reached the database but
whose answer was lost (the connection dropped during the commit) is not added a second time
when it is retried.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from findata.accounts.tables import usage_distinct, usage_log, usage_writes
from findata.accounts.usage import Count, Window, add_to_window
from findata.control_plane.database import upsert_insert

log = logging.getLogger("findata.accounts.usage")

#: how often counts kept outside the database are written to it (a crash loses at most this
#: plus one write)
WRITE_INTERVAL_SECONDS = 0.5
#: how often the writer's sleep looks whether the process is stopping
STOP_CHECK_SECONDS = 0.1
#: a clean stop's waits between tries to write what is left (the database may be restarting)
CLOSE_RETRY_SECONDS = (0.5, 1.0, 2.0, 4.0)
#: ``usage_writes`` rows of processes silent this long are removed (none of them will retry)
FORGET_WRITERS_AFTER = dt.timedelta(days=7)

CounterKey = tuple[str, Window, dt.datetime]  # subject, window, window start
DistinctKey = tuple[str, dt.date, str]  # subject, day, kind


@dataclass
class UsageBatch:
    """What was counted since the last write."""

    counts: dict[CounterKey, Count] = field(default_factory=dict)
    distinct: set[tuple[str, dt.date, str, str]] = field(default_factory=set)
    calls: list[dict[str, Any]] = field(default_factory=list)
    number: int = 0  # its place in the process's sequence, once sealed

    def __bool__(self) -> bool:
        return bool(self.counts or self.distinct or self.calls)

    def add_count(
        self, key: CounterKey, requests: int = 0, rows: int = 0, refused: int = 0
    ) -> None:
        """Add to one window's counts."""
        count = self.counts.setdefault(key, Count())
        count.requests += requests
        count.rows += rows
        count.refused += refused

    def drop_subject(self, subject: str) -> None:
        """Forget ``subject``'s counts and values."""
        self.counts = {k: c for k, c in self.counts.items() if k[0] != subject}
        self.distinct = {d for d in self.distinct if d[0] != subject}


class PendingUsage:
    """The batch being filled, shared by the request threads and the writer, and the sealed
    batches waiting to be written, in order."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.writer_id = uuid.uuid4().hex  # this process's row of usage_writes
        self._batch = UsageBatch()
        self._sealed: deque[UsageBatch] = deque()
        self._numbered = 0

    def add_count(
        self, key: CounterKey, requests: int = 0, rows: int = 0, refused: int = 0
    ) -> None:
        """Count ``requests``, ``rows`` and ``refused`` into the window ``key``."""
        with self.lock:
            self._batch.add_count(key, requests, rows, refused)

    def add_distinct(self, key: DistinctKey, values: list[str]) -> None:
        """Record values (entity ids, ``as_of`` dates) served to a subject on a day."""
        subject, day, kind = key
        with self.lock:
            self._batch.distinct.update((subject, day, kind, value) for value in values)

    def add_call(self, call: dict[str, Any]) -> None:
        """One row of the usage log."""
        with self.lock:
            self._batch.calls.append(call)

    def holds(self, key: CounterKey) -> bool:
        """Whether a batch not yet written has counts of ``key``."""
        with self.lock:
            return any(key in batch.counts for batch in (self._batch, *self._sealed))

    def drop_subject(self, subject: str) -> None:
        """Forget unwritten counts and values of ``subject`` (its counts are being reset)."""
        with self.lock:
            for batch in (self._batch, *self._sealed):
                batch.drop_subject(subject)

    def next_to_write(self) -> UsageBatch | None:
        """The oldest batch not yet written (the one being filled is sealed, numbered, when
        none is older); None when nothing is waiting."""
        with self.lock:
            if not self._sealed and self._batch:
                self._numbered += 1
                self._batch.number = self._numbered
                self._sealed.append(self._batch)
                self._batch = UsageBatch()
            return self._sealed[0] if self._sealed else None

    def written(self, batch: UsageBatch) -> None:
        """``batch`` (the oldest) is on the control plane."""
        with self.lock:
            assert self._sealed[0] is batch
            self._sealed.popleft()

    def unwritten(self) -> str:
        """What is not written yet, in words (for the log of a stop that could not write it)."""
        with self.lock:
            batches = [self._batch, *self._sealed]
            requests = sum(c.requests for b in batches for c in b.counts.values())
            calls = sum(len(b.calls) for b in batches)
        return f"{calls} calls, {requests} window requests"


def claim_batch(connection: sa.Connection, writer_id: str, number: int) -> bool:
    """Move ``writer_id``'s row of ``usage_writes`` to batch ``number`` (inside the batch's
    transaction); False when the row is already there: that batch was written before."""
    insert = upsert_insert(connection)
    statement = insert(usage_writes).values(
        writer=writer_id, last_batch=number, written_at=dt.datetime.now(dt.UTC)
    )
    statement = statement.on_conflict_do_update(
        index_elements=["writer"],
        set_={
            "last_batch": statement.excluded.last_batch,
            "written_at": statement.excluded.written_at,
        },
        where=usage_writes.c.last_batch < statement.excluded.last_batch,
    ).returning(usage_writes.c.writer)
    return connection.execute(statement).first() is not None


def write_batch(connection: sa.Connection, batch: UsageBatch) -> None:
    """Add a batch to the durable counts, distinct values and call log (inside the caller's
    transaction): one upsert per window, one insert per table."""
    insert = upsert_insert(connection)
    for (subject, window, start), count in sorted(batch.counts.items()):
        add_to_window(connection, subject, window, start, count)
    if batch.distinct:
        rows = [
            dict(zip(("subject", "day", "kind", "value"), d, strict=True)) for d in batch.distinct
        ]
        connection.execute(
            insert(usage_distinct)
            .values(rows)
            .on_conflict_do_nothing(index_elements=["subject", "day", "kind", "value"])
        )
    if batch.calls:
        connection.execute(usage_log.insert(), batch.calls)


def forget_silent_writers(engine: sa.Engine) -> None:
    """Remove the ``usage_writes`` rows of processes that wrote nothing for a long time (a best
    effort at start: a database that does not answer now is not a reason not to serve)."""
    cutoff = dt.datetime.now(dt.UTC) - FORGET_WRITERS_AFTER
    try:
        with engine.begin() as connection:
            connection.execute(sa.delete(usage_writes).where(usage_writes.c.written_at < cutoff))
    except sa.exc.SQLAlchemyError:
        log.warning("old usage writers not removed", exc_info=True)


class UsageWriter:
    """Writes the pending batch to the control plane every ``interval`` seconds, on a daemon
    thread, and once more on :meth:`close`."""

    def __init__(
        self, engine: sa.Engine, pending: PendingUsage, interval: float = WRITE_INTERVAL_SECONDS
    ) -> None:
        self.engine = engine
        self.pending = pending
        self.interval = interval
        self._stop = threading.Event()
        self._written = threading.Lock()  # one write at a time (the thread, flush, close)
        forget_silent_writers(engine)
        self._thread = threading.Thread(target=self._run, name="usage-writer", daemon=True)
        self._thread.start()

    def flush(self) -> bool:
        """Write every batch waiting, oldest first, each in its own transaction; False (the
        batch kept for the next try, with those after it) on failure."""
        with self._written:
            while (batch := self.pending.next_to_write()) is not None:
                try:
                    with self.engine.begin() as connection:
                        if claim_batch(connection, self.pending.writer_id, batch.number):
                            write_batch(connection, batch)
                except sa.exc.SQLAlchemyError:
                    log.warning("usage not written yet (kept for the next try)", exc_info=True)
                    return False
                self.pending.written(batch)
            return True

    def close(self) -> None:
        """Stop the thread after a last write, retried for a few seconds (the database may be
        restarting); what still could not be written is logged, as lost."""
        self._stop.set()
        self._thread.join()
        for wait in (*CLOSE_RETRY_SECONDS, None):
            if self.flush():
                return
            if wait is not None:
                time.sleep(wait)
        log.error(
            "usage lost at stop (the control plane did not answer): %s", self.pending.unwritten()
        )

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wait_interval()
            self.flush()

    def _wait_interval(self) -> None:
        """Sleep ``interval`` in short steps, ending early on :meth:`close`. Sleeps, not a
        timed Event.wait: under libfaketime (make test-days) a timed wait never returns."""
        steps = max(1, math.ceil(self.interval / STOP_CHECK_SECONDS))
        for _ in range(steps):
            if self._stop.is_set():
                return
            time.sleep(self.interval / steps)
