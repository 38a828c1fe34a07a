"""Usage written to the control plane in batches: what counters that live outside the database
(this process's memory, Redis) added since the last write, written in one transaction by a
background thread every ``interval`` seconds.

A crash (SIGKILL, power loss) loses what was added since the last write: at most ``interval``
plus one write's time. A write that fails (the database restarting) keeps its batch for the
next one, so an outage delays usage but does not lose it while the process lives.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from findata.accounts.tables import usage_distinct, usage_log
from findata.accounts.usage import Count, Window, add_to_window

log = logging.getLogger("findata.accounts.usage")

#: how often counts kept outside the database are written to it (a crash loses at most this
#: plus one write)
WRITE_INTERVAL_SECONDS = 0.5

CounterKey = tuple[str, Window, dt.datetime]  # subject, window, window start
DistinctKey = tuple[str, dt.date, str]  # subject, day, kind


@dataclass
class UsageBatch:
    """What was counted since the last write."""

    counts: dict[CounterKey, Count] = field(default_factory=dict)
    distinct: set[tuple[str, dt.date, str, str]] = field(default_factory=set)
    calls: list[dict[str, Any]] = field(default_factory=list)

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

    def merge(self, other: UsageBatch) -> None:
        """Take ``other``'s additions too (a failed write goes back into the pending batch)."""
        for key, count in other.counts.items():
            self.add_count(key, count.requests, count.rows, count.refused)
        self.distinct |= other.distinct
        self.calls[:0] = other.calls


class PendingUsage:
    """The batch being filled, shared by the request threads and the writer."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._batch = UsageBatch()

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
        """Whether the batch has unwritten counts of ``key``."""
        with self.lock:
            return key in self._batch.counts

    def drop_subject(self, subject: str) -> None:
        """Forget unwritten counts and values of ``subject`` (its counts are being reset)."""
        with self.lock:
            batch = self._batch
            batch.counts = {k: c for k, c in batch.counts.items() if k[0] != subject}
            batch.distinct = {d for d in batch.distinct if d[0] != subject}

    def take(self) -> UsageBatch:
        """The batch so far; a new one starts."""
        with self.lock:
            batch, self._batch = self._batch, UsageBatch()
        return batch

    def put_back(self, batch: UsageBatch) -> None:
        """A batch whose write failed: it goes out with the next one."""
        with self.lock:
            batch.merge(self._batch)
            self._batch = batch


def write_batch(connection: sa.Connection, batch: UsageBatch) -> None:
    """Add a batch to the durable counts, distinct values and call log (inside the caller's
    transaction): one upsert per window, one insert per table."""
    insert = (postgresql if connection.dialect.name == "postgresql" else sqlite).insert
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
        self._thread = threading.Thread(target=self._run, name="usage-writer", daemon=True)
        self._thread.start()

    def flush(self) -> bool:
        """Write what is pending now; False (the batch kept for the next try) on failure."""
        with self._written:
            batch = self.pending.take()
            if not batch:
                return True
            try:
                with self.engine.begin() as connection:
                    write_batch(connection, batch)
            except sa.exc.SQLAlchemyError:
                log.warning("usage not written yet (kept for the next try)", exc_info=True)
                self.pending.put_back(batch)
                return False
            return True

    def close(self) -> None:
        """Stop the thread after a last write."""
        self._stop.set()
        self._thread.join()
        self.flush()

    def _run(self) -> None:
        # a sleep, not a timed Event.wait: under libfaketime (make test-days) a timed wait
        # never returns, and the batches would wait for the clean stop
        while not self._stop.is_set():
            time.sleep(self.interval)
            self.flush()
