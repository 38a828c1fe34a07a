"""One request rate for every process that fetches from the SEC on a home.

The SEC allows 10 requests a second per address, whoever sends them: two fetches at once (a
backfill of two days in the UI, a command beside the schedule) share one budget. The budget is a
leaky bucket in an SQLite file under ``$FINDATA_HOME/fetch`` (pyrate-limiter's ``SQLiteBucket``
under a file lock), spacing requests one interval apart: ``1 / sec_requests_per_second``.

A 429 or 403 halves the rate (doubles the interval) for every process of the home for
``sec_lowered_minutes``: the lowered interval is kept in the same file, and each request reads
it before it waits.
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from pyrate_limiter import Limiter, Rate, SQLiteBucket

#: the longest interval lowering may reach (one request every 10 s)
LONGEST_INTERVAL_MS = 10_000
_BUCKET = "sec_requests"


class SharedRateLimit:
    """Requests to the SEC, one ``interval`` apart across the processes sharing ``path``."""

    def __init__(self, path: Path, requests_per_second: float, lowered_seconds: float) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.base_interval_ms = max(1, math.ceil(1000 / requests_per_second))
        self.lowered_seconds = lowered_seconds
        # the library's file lock serialises processes; threads of this one wait in turn here
        self._thread_lock = threading.Lock()
        self._limiters: dict[int, Limiter] = {}
        with self._state() as state:
            state.execute(
                "CREATE TABLE IF NOT EXISTS lowered (id INTEGER PRIMARY KEY CHECK (id = 1), "
                "interval_ms INTEGER NOT NULL, until REAL NOT NULL)"
            )

    @contextlib.contextmanager
    def _state(self) -> Iterator[sqlite3.Connection]:
        connection = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            yield connection
        finally:
            connection.close()

    def interval_ms(self) -> int:
        """The interval now in force: the base one, or a lowered one still running."""
        with self._state() as state:
            row = state.execute("SELECT interval_ms, until FROM lowered WHERE id = 1").fetchone()
        if row is None or row[1] <= time.time():
            return self.base_interval_ms
        return max(self.base_interval_ms, int(row[0]))

    def lower(self) -> int:
        """Double the interval for every process of the home, for ``lowered_seconds`` from
        now; the new interval."""
        with self._state() as state:
            state.execute("BEGIN IMMEDIATE")
            row = state.execute("SELECT interval_ms, until FROM lowered WHERE id = 1").fetchone()
            current = int(row[0]) if row and row[1] > time.time() else self.base_interval_ms
            interval = min(LONGEST_INTERVAL_MS, max(current, self.base_interval_ms) * 2)
            state.execute(
                "INSERT INTO lowered (id, interval_ms, until) VALUES (1, ?, ?) ON CONFLICT (id) "
                "DO UPDATE SET interval_ms = excluded.interval_ms, until = excluded.until",
                (interval, time.time() + self.lowered_seconds),
            )
            state.execute("COMMIT")
        return interval

    def acquire(self) -> None:
        """Wait until the next request may go."""
        interval = self.interval_ms()
        with self._thread_lock:
            limiter = self._limiters.get(interval)
            if limiter is None:
                bucket = SQLiteBucket.init_from_file(
                    [Rate(1, interval)], table=_BUCKET, db_path=str(self.path), use_file_lock=True
                )
                limiter = self._limiters[interval] = Limiter(bucket, buffer_ms=5)
            limiter.try_acquire(_BUCKET, blocking=True)

    def close(self) -> None:
        """Close the buckets' connections."""
        with self._thread_lock:
            for limiter in self._limiters.values():
                limiter.close()
            self._limiters.clear()
