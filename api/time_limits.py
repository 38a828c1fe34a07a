"""Time limits of a data request (spec "Errors": 504 ``request_timeout`` and ``query_timeout``).

A request gets a deadline when its steps start (``request_time_limit``); every DuckDB query it
runs (``run_query``) is interrupted (``DuckDBPyConnection.interrupt``) when it runs past the
query limit or past the request's deadline, whichever comes first, and the handler's steps check
the deadline between them (``check_request_time``). A query stopped at its own limit answers
``query_timeout``; anything stopped by the request's deadline answers ``request_timeout``.

The limits are wall-clock durations (the service's CPU is what they protect), not the app's
injectable calendar clock. The deadline travels in a context variable, so the query helpers need
no extra argument; a query outside a request (tests, scripts) runs without a limit.
"""

from __future__ import annotations

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
    # the interrupt comes from a timer thread; cancel() after the rows are read disarms it
    timer = threading.Timer(min(deadline.query_seconds, remaining), cursor.interrupt)
    timer.daemon = True
    timer.start()
    try:
        result = cursor.execute(sql, values)
        return [d[0] for d in result.description], result.fetchall()
    except duckdb.InterruptException:
        raise ApiError("query_timeout" if query_limited else "request_timeout") from None
    finally:
        timer.cancel()
