"""Usage counters in this process's memory, under one lock: loaded from the control plane the
first time a subject's window is used, and written back in batches (``batches.py``). Exact
while this is the only process counting on the control plane: the embedded default, one
``findata serve`` worker on SQLite."""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import asdict

import sqlalchemy as sa

from findata.accounts import usage
from findata.accounts.counters.batches import (
    WRITE_INTERVAL_SECONDS,
    CounterKey,
    DistinctKey,
    PendingUsage,
    UsageWriter,
)
from findata.accounts.counters.interface import AnsweredCall, CountersKind, UsageCounters
from findata.accounts.usage import (
    WINDOWS,
    Count,
    Limits,
    Refusal,
    Reserved,
    Window,
    read_count,
    read_distinct,
    refusal_of,
    window_start,
)

#: windows kept in memory before old, written ones are dropped
MEMORY_WINDOWS = 4096


class MemoryCounters(UsageCounters):
    """The counts in this process's memory under one lock; the control plane gets them in
    batches. Only for a single counting process per control plane."""

    kind: CountersKind = "memory"

    def __init__(self, engine: sa.Engine, interval: float = WRITE_INTERVAL_SECONDS) -> None:
        self.engine = engine
        self.pending = PendingUsage()
        self.writer = UsageWriter(engine, self.pending, interval)
        self._lock = threading.Lock()
        self._counts: dict[CounterKey, Count] = {}
        self._distinct: dict[DistinctKey, set[str]] = {}

    def reserve(
        self, subject: str, now: dt.datetime, cost: int, limits: Limits
    ) -> Reserved | Refusal:
        with self._lock:
            day_key, day = self._window(subject, "day", now)
            hour_key, hour = self._window(subject, "hour", now)
            refusal = refusal_of(day, hour, cost, limits)
            if refusal in ("requests_hour", "requests_hour_again"):
                hour.refused += 1
                self.pending.add_count(hour_key, refused=1)
            if refusal is not None:
                return refusal
            for key, count in ((day_key, day), (hour_key, hour)):
                count.requests += cost
                self.pending.add_count(key, requests=cost)
            return Reserved(now, day.requests, hour.requests, day.rows, hour.rows)

    def release(self, subject: str, at: dt.datetime, cost: int) -> None:
        self.add_usage(subject, at, requests=-cost)

    def add_usage(self, subject: str, at: dt.datetime, *, requests: int, rows: int = 0) -> None:
        with self._lock:
            self._add(subject, at, requests, rows)

    def count_answer(
        self, subject: str, at: dt.datetime, call: AnsweredCall, entities: list[str]
    ) -> tuple[int, int]:
        with self._lock:
            rows_today = self._add(subject, at, 0, call.rows).rows
            entities_today = self._add_distinct((subject, at.date(), "entity"), entities)
        self.pending.add_call({"subject": subject, "at": at, **asdict(call)})
        return rows_today, entities_today

    def add_distinct(self, subject: str, day: dt.date, kind: str, values: list[str]) -> int:
        with self._lock:
            return self._add_distinct((subject, day, kind), values)

    def count_distinct(self, subject: str, day: dt.date, kind: str) -> int:
        with self._lock:
            return len(self._values((subject, day, kind)))

    def add_distinct_within(
        self, subject: str, day: dt.date, kind: str, value: str, allowance: int
    ) -> int | None:
        with self._lock:
            if len(self._values((subject, day, kind))) >= allowance:
                return None
            return self._add_distinct((subject, day, kind), [value])

    def usage(self, subject: str, at: dt.datetime, window: Window) -> tuple[int, int]:
        with self._lock:
            count = self._window(subject, window, at)[1]
            return count.requests, count.rows

    def reset(self, subject: str) -> None:
        with self._lock:
            self.pending.drop_subject(subject)
            self.writer.flush()  # waits for a write in flight, which may hold the subject
            with self.engine.begin() as connection:
                usage.forget_counts(connection, subject)
            self._counts = {k: c for k, c in self._counts.items() if k[0] != subject}
            self._distinct = {k: v for k, v in self._distinct.items() if k[0] != subject}

    def flush(self) -> None:
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()

    def _add(self, subject: str, at: dt.datetime, requests: int, rows: int) -> Count:
        """Add to both windows of ``at`` (under the lock); the day's counts after it."""
        counts = []
        for window in WINDOWS:
            key, count = self._window(subject, window, at)
            count.requests += requests
            count.rows += rows
            self.pending.add_count(key, requests=requests, rows=rows)
            counts.append(count)
        return counts[0]

    def _window(self, subject: str, window: Window, at: dt.datetime) -> tuple[CounterKey, Count]:
        """The live counts of one window (under the lock), read from the control plane the
        first time."""
        key: CounterKey = (subject, window, window_start(at, window))
        count = self._counts.get(key)
        if count is None:
            with self.engine.connect() as connection:
                count = read_count(connection, *key)
            self._drop_old_windows(key)
            self._counts[key] = count
        return key, count

    def _values(self, key: DistinctKey) -> set[str]:
        values = self._distinct.get(key)
        if values is None:
            with self.engine.connect() as connection:
                values = read_distinct(connection, *key)
            if len(self._distinct) >= MEMORY_WINDOWS:
                self._distinct = {k: v for k, v in self._distinct.items() if k[1] >= key[1]}
            self._distinct[key] = values
        return values

    def _add_distinct(self, key: DistinctKey, values: list[str]) -> int:
        known = self._values(key)
        new = [value for value in values if value not in known]
        known.update(new)
        if new:
            self.pending.add_distinct(key, new)
        return len(known)

    def _drop_old_windows(self, newest: CounterKey) -> None:
        """Past windows whose counts are all written are read again from the control plane if
        ever needed: drop them once many are kept."""
        if len(self._counts) < MEMORY_WINDOWS:
            return
        self._counts = {
            key: count
            for key, count in self._counts.items()
            if key[2] >= window_start(newest[2], key[1]) or self.pending.holds(key)
        }
