"""The counters that admit requests: where the live request, row and distinct-value counts are
kept, chosen by the settings (:func:`usage_counters_for`).

- ``database``: every reservation is a control-plane transaction (row locks on PostgreSQL,
  SQLite's write lock). Exact with any number of workers and hosts; the slowest.
- ``memory``: the counts live in this process, loaded from the control plane the first time a
  subject's window is used, and written back in batches (``accounts/usage_batches.py``). Exact
  while this is the only process counting on the control plane: the embedded default, one
  ``findata serve`` worker on SQLite.
- ``redis``: the counts live in Redis and change by atomic scripts (``accounts/redis_counters.py``),
  shared by every worker and host on the same Redis; each process writes what it added to the
  control plane in batches.

With ``memory`` and ``redis`` a crash loses at most about one second of counted usage (what the
writer had not written yet); admission stays exact, since it reads the live counts.
"""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import asdict, dataclass
from typing import Literal, Protocol

import sqlalchemy as sa

from findata.accounts import usage
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
from findata.accounts.usage_batches import (
    WRITE_INTERVAL_SECONDS,
    CounterKey,
    DistinctKey,
    PendingUsage,
    UsageWriter,
)

CountersKind = Literal["database", "memory", "redis"]
#: windows kept in memory before old, written ones are dropped
MEMORY_WINDOWS = 4096


@dataclass(frozen=True)
class AnsweredCall:
    """An answered request as the usage log records it."""

    endpoint: str
    status: int
    requests: int
    rows: int


class UsageCounters(Protocol):
    """Live usage counts per subject (an account id, or ``ip:<address>``) and UTC window."""

    kind: CountersKind

    def reserve(
        self, subject: str, now: dt.datetime, cost: int, limits: Limits
    ) -> Reserved | Refusal:
        """Take ``cost`` requests from the day and hour of ``now``, all or nothing, or say which
        allowance refuses them (a refused hourly request is counted as refused)."""
        ...

    def release(self, subject: str, at: dt.datetime, cost: int) -> None:
        """Give back a reservation made at ``at``."""
        ...

    def add_usage(self, subject: str, at: dt.datetime, *, requests: int, rows: int = 0) -> None:
        """Add requests and rows to the day and hour of ``at`` (usage counted elsewhere)."""
        ...

    def count_answer(
        self, subject: str, at: dt.datetime, call: AnsweredCall, entities: list[str]
    ) -> tuple[int, int]:
        """Count an answer: its rows, the entities it served, a row of the usage log. The day's
        rows and distinct entities after it."""
        ...

    def add_distinct(self, subject: str, day: dt.date, kind: str, values: list[str]) -> int:
        """Record values (entity ids, ``as_of`` dates) served on ``day``; how many now."""
        ...

    def count_distinct(self, subject: str, day: dt.date, kind: str) -> int:
        """Distinct values of ``kind`` served to the subject on ``day``."""
        ...

    def add_distinct_within(
        self, subject: str, day: dt.date, kind: str, value: str, allowance: int
    ) -> int | None:
        """Atomically: None when ``allowance`` distinct values are already used on ``day``
        (even if ``value`` is one of them), else record ``value`` and say how many now."""
        ...

    def usage(self, subject: str, at: dt.datetime, window: Window) -> tuple[int, int]:
        """Requests and rows counted in the window holding ``at``."""
        ...

    def reset(self, subject: str) -> None:
        """Forget the subject's counts and distinct values (an operator's fresh start)."""
        ...

    def flush(self) -> None:
        """Write what is counted but not yet on the control plane."""
        ...

    def close(self) -> None:
        """Write what is pending and stop writing."""
        ...


class DatabaseCounters:
    """Every count a control-plane transaction."""

    kind: CountersKind = "database"

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine

    def reserve(
        self, subject: str, now: dt.datetime, cost: int, limits: Limits
    ) -> Reserved | Refusal:
        with self.engine.begin() as connection:
            return usage.reserve(connection, subject, now, cost, limits)

    def release(self, subject: str, at: dt.datetime, cost: int) -> None:
        with self.engine.begin() as connection:
            usage.release(connection, subject, at, cost)

    def add_usage(self, subject: str, at: dt.datetime, *, requests: int, rows: int = 0) -> None:
        with self.engine.begin() as connection:
            usage.add_usage(connection, subject, at, requests=requests, rows=rows)

    def count_answer(
        self, subject: str, at: dt.datetime, call: AnsweredCall, entities: list[str]
    ) -> tuple[int, int]:
        with self.engine.begin() as connection:
            rows_today = usage.add_rows(connection, subject, at, call.rows)
            entities_today = usage.add_distinct(connection, subject, at.date(), "entity", entities)
            usage.log_call(
                connection, subject, at, call.endpoint, call.status, call.requests, call.rows
            )
        return rows_today, entities_today

    def add_distinct(self, subject: str, day: dt.date, kind: str, values: list[str]) -> int:
        with self.engine.begin() as connection:
            return usage.add_distinct(connection, subject, day, kind, values)

    def count_distinct(self, subject: str, day: dt.date, kind: str) -> int:
        with self.engine.connect() as connection:
            return usage.count_distinct(connection, subject, day, kind)

    def add_distinct_within(
        self, subject: str, day: dt.date, kind: str, value: str, allowance: int
    ) -> int | None:
        with self.engine.begin() as connection:
            # a write first, adding nothing to the subject's day counter: the upsert holds
            # SQLite's write lock, or PostgreSQL's lock on that row, until the commit, so
            # concurrent calls for the subject queue before they count
            usage.add_to_window(connection, subject, "day", _midnight(day), Count())
            if usage.count_distinct(connection, subject, day, kind) >= allowance:
                return None
            return usage.add_distinct(connection, subject, day, kind, [value])

    def usage(self, subject: str, at: dt.datetime, window: Window) -> tuple[int, int]:
        with self.engine.connect() as connection:
            return usage.usage_in_window(connection, subject, at, window)

    def reset(self, subject: str) -> None:
        with self.engine.begin() as connection:
            usage.forget_counts(connection, subject)

    def flush(self) -> None:
        """Nothing is pending: every count is already a transaction."""

    def close(self) -> None:
        """Nothing to stop."""


class MemoryCounters:
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


def _midnight(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), dt.UTC)


def usage_counters_for(
    kind: CountersKind, engine: sa.Engine, redis_url: str | None = None
) -> UsageCounters:
    """The counters of ``kind`` on the control plane ``engine`` (Redis at ``redis_url``)."""
    if kind == "memory":
        return MemoryCounters(engine)
    if kind == "redis":
        from findata.accounts.redis_counters import RedisCounters

        if redis_url is None:
            raise ValueError("redis usage counters need a Redis URL (FINDATA_CACHE_URL)")
        return RedisCounters(redis_url, engine)
    return DatabaseCounters(engine)
