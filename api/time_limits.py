"""Time limits of a data request (spec "Errors": 504 ``request_timeout`` and ``query_timeout``).

A request gets a deadline when its steps start (``request_time_limit``); every DuckDB query it
runs (``run_query``) is interrupted (``DuckDBPyConnection.interrupt``) when it runs past the
query limit or past the request's deadline, whichever comes first, and the handler's steps check
the deadline between them (``check_request_time``). A query stopped at its own limit answers
``query_timeout``; anything stopped by the request's deadline answers ``request_timeout``.

One watchdog thread per process fires the interrupts. The limits are wall-clock durations (the
service's CPU is what they protect), not the app's injectable calendar clock. The deadline
travels in a context variable, so the query helpers need no extra argument; a query outside a
request (tests, scripts) runs without a limit.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import duckdb

from findata.api.errors import ApiError


@dataclass(frozen=True)
class Deadline:
    """When the request must be answered (``time.monotonic`` seconds) and how long one query
    may run."""

    request_ends: float
    query_seconds: float

    def remaining(self) -> float:
        """Seconds left before the request's deadline."""
        return self.request_ends - time.monotonic()


_deadline: ContextVar[Deadline | None] = ContextVar("findata_deadline", default=None)


@contextmanager
def request_time_limit(request_seconds: float, query_seconds: float) -> Iterator[Deadline]:
    """The request's deadline, from now, for the steps run inside the block."""
    deadline = Deadline(time.monotonic() + request_seconds, query_seconds)
    token = _deadline.set(deadline)
    try:
        yield deadline
    finally:
        _deadline.reset(token)


def check_request_time() -> None:
    """504 ``request_timeout`` when the request's deadline has passed."""
    deadline = _deadline.get()
    if deadline is not None and deadline.remaining() <= 0:
        raise ApiError("request_timeout")


def run_query(
    cursor: duckdb.DuckDBPyConnection, sql: str, values: Any
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run ``sql`` to its last row within the request's limits: the column names and rows."""
    deadline = _deadline.get()
    if deadline is None:
        result = cursor.execute(sql, values)
        return [d[0] for d in result.description], result.fetchall()
    remaining = deadline.remaining()
    if remaining <= 0:
        raise ApiError("request_timeout")
    query_limited = deadline.query_seconds <= remaining
    alarm = _WATCHDOG.arm(time.monotonic() + min(deadline.query_seconds, remaining), cursor)
    try:
        result = cursor.execute(sql, values)
        return [d[0] for d in result.description], result.fetchall()
    except duckdb.InterruptException:
        raise ApiError("query_timeout" if query_limited else "request_timeout") from None
    finally:
        _WATCHDOG.disarm(alarm)


#: how often a query past its time is interrupted again until it stops
REPEAT_SECONDS = 0.01
#: the longest the watchdog sleeps before looking at the next due query again
POLL_SECONDS = 0.02


class _Watchdog:
    """One thread per process that interrupts the queries whose time is up (a thread per query
    would cost its start on every query of the hot path). Started on the first query."""

    def __init__(self) -> None:
        self._due: list[tuple[float, int, duckdb.DuckDBPyConnection]] = []
        self._armed: set[int] = set()
        self._count = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def arm(self, when: float, cursor: duckdb.DuckDBPyConnection) -> int:
        """Interrupt ``cursor`` at ``when`` (``time.monotonic``) unless disarmed first."""
        alarm = next(self._count)
        with self._wake:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="query-watchdog")
                self._thread.daemon = True
                self._thread.start()
            heapq.heappush(self._due, (when, alarm, cursor))
            self._armed.add(alarm)
            self._wake.notify()
        return alarm

    def disarm(self, alarm: int) -> None:
        """The query ended: never interrupt it (its heap entry is dropped when it comes due)."""
        with self._wake:
            self._armed.discard(alarm)

    def _run(self) -> None:
        with self._wake:
            while True:
                while self._due and self._due[0][1] not in self._armed:
                    heapq.heappop(self._due)  # disarmed: the query ended in time
                if not self._due:
                    self._wake.wait()
                    continue
                when, alarm, cursor = self._due[0]
                wait = when - time.monotonic()
                if wait > 0:
                    # a short sleep with the lock let go, not a timed wait: under libfaketime
                    # (make test-days) a timed wait never returns and no query would be stopped
                    self._wake.release()
                    try:
                        time.sleep(min(wait, POLL_SECONDS))
                    finally:
                        self._wake.acquire()
                    continue
                heapq.heappop(self._due)
                # under the lock: a query ending now waits in disarm() until this call has
                # returned, so the interrupt cannot reach the cursor's next query
                cursor.interrupt()
                # DuckDB drops an interrupt that found no query running yet (the call still
                # binding its parameters, say): interrupt again shortly, until it is disarmed
                heapq.heappush(self._due, (time.monotonic() + REPEAT_SECONDS, alarm, cursor))


_WATCHDOG = _Watchdog()
