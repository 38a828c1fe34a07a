"""Usage counters per subject (an account id) and UTC window: requests and rows, on the control
plane.

One row per subject, window kind and window start; adding is one atomic upsert, so counts stay
exact with many workers on SQLite or PostgreSQL. These are the durable counts: the counters that
admit requests (``accounts/counters/``) either run their transactions here or keep the live
counts elsewhere and write what they add here in batches (``counters/batches.py``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

import sqlalchemy as sa

from findata.accounts.tables import usage_counters, usage_distinct, usage_log
from findata.clock import as_utc
from findata.control_plane.database import upsert_insert

Window = Literal["day", "hour"]
WINDOWS: tuple[Window, Window] = ("day", "hour")


def window_start(now: dt.datetime, window: Window) -> dt.datetime:
    """The start of the UTC day or clock hour holding ``now``."""
    now = now.astimezone(dt.UTC)
    if window == "day":
        return now.replace(hour=0, minute=0, second=0, microsecond=0)
    return now.replace(minute=0, second=0, microsecond=0)


def next_window_start(now: dt.datetime, window: Window) -> dt.datetime:
    """When the window holding ``now`` ends (00:00 UTC next day, or the next clock hour)."""
    step = dt.timedelta(days=1) if window == "day" else dt.timedelta(hours=1)
    return window_start(now, window) + step


def add_usage(
    connection: sa.Connection,
    subject: str,
    now: dt.datetime,
    *,
    requests: int,
    rows: int = 0,
) -> None:
    """Add to the subject's day and hour counters holding ``now`` (inside the caller's
    transaction)."""
    for window in WINDOWS:
        add_to_window(connection, subject, window, window_start(now, window), Count(requests, rows))


def add_to_window(
    connection: sa.Connection, subject: str, window: Window, start: dt.datetime, added: Count
) -> None:
    """Add ``added`` to one window's counts: one atomic upsert (inside the caller's
    transaction)."""
    insert = upsert_insert(connection)
    statement = insert(usage_counters).values(
        subject=subject,
        window=window,
        window_start=start,
        requests=added.requests,
        rows=added.rows,
        refused=added.refused,
    )
    connection.execute(
        statement.on_conflict_do_update(
            index_elements=["subject", "window", "window_start"],
            set_={
                "requests": usage_counters.c.requests + statement.excluded.requests,
                "rows": usage_counters.c.rows + statement.excluded.rows,
                "refused": usage_counters.c.refused + statement.excluded.refused,
            },
        )
    )


def usage_in_window(
    connection: sa.Connection, subject: str, now: dt.datetime, window: Window
) -> tuple[int, int]:
    """Requests and rows counted for ``subject`` in the window holding ``now``."""
    count = read_count(connection, subject, window, window_start(now, window))
    return count.requests, count.rows


@dataclass(frozen=True)
class Limits:
    """The allowances a reservation is checked against (None: no such limit)."""

    requests_per_day: int
    requests_per_hour: int | None
    rows_per_day: int | None = None
    rows_per_hour: int | None = None


@dataclass(frozen=True)
class Reserved:
    """Counts after a granted reservation (this request included)."""

    at: dt.datetime
    requests_day: int
    requests_hour: int
    rows_day: int
    rows_hour: int


Refusal = Literal["requests_day", "requests_hour", "requests_hour_again", "rows_day", "rows_hour"]


@dataclass
class Count:
    """One window's counts (or what a batch adds to them)."""

    requests: int = 0
    rows: int = 0
    refused: int = 0


def refusal_of(day: Count, hour: Count, cost: int, limits: Limits) -> Refusal | None:
    """Which allowance refuses ``cost`` more requests on these counts, or None: rows first (a
    request that would pass the row allowance is refused before any request limit), then the
    day's requests, then the hour's (a second hourly refusal is ``requests_hour_again``; the
    caller counts the refusal)."""
    if limits.rows_per_day is not None and day.rows >= limits.rows_per_day:
        return "rows_day"
    if limits.rows_per_hour is not None and hour.rows >= limits.rows_per_hour:
        return "rows_hour"
    if day.requests + cost > limits.requests_per_day:
        return "requests_day"
    if limits.requests_per_hour is not None and hour.requests + cost > limits.requests_per_hour:
        return "requests_hour_again" if hour.refused else "requests_hour"
    return None


def reserve(
    connection: sa.Connection, subject: str, now: dt.datetime, cost: int, limits: Limits
) -> Reserved | Refusal:
    """Take ``cost`` requests from the subject's day and hour, all or nothing, inside the
    caller's transaction; or say which allowance refuses it.

    The first statement writes (so SQLite takes its write lock at once and concurrent
    reservations queue instead of deadlocking); PostgreSQL locks both counter rows. A refusal of
    the hourly request limit is remembered (``refused``) so a keyless client that continues gets
    the spec's second 429.
    """
    insert = upsert_insert(connection)
    keys = {window: window_start(now, window) for window in ("day", "hour")}
    for window, start in keys.items():
        connection.execute(
            insert(usage_counters)
            .values(subject=subject, window=window, window_start=start, requests=0, rows=0)
            .on_conflict_do_nothing(index_elements=["subject", "window", "window_start"])
        )
    rows = {}
    for window, start in keys.items():
        query = sa.select(usage_counters).where(_counter(subject, window, start))
        if connection.dialect.name == "postgresql":
            query = query.with_for_update()
        rows[window] = connection.execute(query).one()
    day, hour = (Count(r.requests, r.rows, r.refused) for r in (rows["day"], rows["hour"]))
    refusal = refusal_of(day, hour, cost, limits)
    if refusal in ("requests_hour", "requests_hour_again"):
        connection.execute(
            usage_counters.update()
            .where(_counter(subject, "hour", keys["hour"]))
            .values(refused=usage_counters.c.refused + 1)
        )
    if refusal is not None:
        return refusal
    for window, start in keys.items():
        connection.execute(
            usage_counters.update()
            .where(_counter(subject, window, start))
            .values(requests=usage_counters.c.requests + cost)
        )
    return Reserved(now, day.requests + cost, hour.requests + cost, day.rows, hour.rows)


def read_count(
    connection: sa.Connection, subject: str, window: Window, start: dt.datetime
) -> Count:
    """The durable counts of one window (zeros when nothing was counted)."""
    row = connection.execute(
        sa.select(usage_counters.c.requests, usage_counters.c.rows, usage_counters.c.refused).where(
            _counter(subject, window, start)
        )
    ).first()
    return Count() if row is None else Count(row.requests, row.rows, row.refused)


def read_distinct(connection: sa.Connection, subject: str, day: dt.date, kind: str) -> set[str]:
    """The values of ``kind`` recorded for the subject on ``day``."""
    return set(
        connection.execute(
            sa.select(usage_distinct.c.value).where(
                usage_distinct.c.subject == subject,
                usage_distinct.c.day == day,
                usage_distinct.c.kind == kind,
            )
        ).scalars()
    )


def forget_counts(connection: sa.Connection, subject: str) -> None:
    """Delete the subject's request and row counts and its distinct values (its call log
    stays: it is history, not allowance)."""
    connection.execute(usage_counters.delete().where(usage_counters.c.subject == subject))
    connection.execute(usage_distinct.delete().where(usage_distinct.c.subject == subject))


def release(connection: sa.Connection, subject: str, at: dt.datetime, cost: int) -> None:
    """Give back a reservation made at ``at`` (the request was refused after all)."""
    for window in ("day", "hour"):
        connection.execute(
            usage_counters.update()
            .where(_counter(subject, window, window_start(at, window)))
            .values(requests=usage_counters.c.requests - cost)
        )


def add_rows(connection: sa.Connection, subject: str, at: dt.datetime, rows: int) -> int:
    """Add the rows of an answer to the day and hour of ``at``; the day's rows after it."""
    for window in ("day", "hour"):
        connection.execute(
            usage_counters.update()
            .where(_counter(subject, window, window_start(at, window)))
            .values(rows=usage_counters.c.rows + rows)
        )
    return usage_in_window(connection, subject, at, "day")[1]


def add_distinct(
    connection: sa.Connection, subject: str, day: dt.date, kind: str, values: list[str]
) -> int:
    """Record the values (entity ids, as_of dates) served today; how many distinct ones now."""
    insert = upsert_insert(connection)
    if values:
        connection.execute(
            insert(usage_distinct)
            .values([{"subject": subject, "day": day, "kind": kind, "value": v} for v in values])
            .on_conflict_do_nothing(index_elements=["subject", "day", "kind", "value"])
        )
    return count_distinct(connection, subject, day, kind)


def count_distinct(connection: sa.Connection, subject: str, day: dt.date, kind: str) -> int:
    """Distinct values of ``kind`` recorded for the subject on ``day``."""
    return connection.execute(
        sa.select(sa.func.count()).where(
            usage_distinct.c.subject == subject,
            usage_distinct.c.day == day,
            usage_distinct.c.kind == kind,
        )
    ).scalar_one()


def log_call(
    connection: sa.Connection,
    subject: str,
    at: dt.datetime,
    endpoint: str,
    status: int,
    requests: int,
    rows: int,
) -> None:
    """One row of the usage log (the dashboard counts calls from it)."""
    connection.execute(
        usage_log.insert().values(
            subject=subject,
            at=at,
            endpoint=endpoint,
            status=status,
            requests=requests,
            rows=rows,
        )
    )


def _counter(subject: str, window: Window, start: dt.datetime) -> sa.ColumnElement[bool]:
    return sa.and_(
        usage_counters.c.subject == subject,
        usage_counters.c.window == window,
        usage_counters.c.window_start == start,
    )


def calls_by_day(
    connection: sa.Connection, subject: str, first: dt.date, last: dt.date
) -> dict[dt.date, int]:
    """API calls of ``subject`` per UTC day from ``first`` to ``last`` (one per call, whatever
    its ticker count: the dashboard's chart), every day present."""
    start = dt.datetime.combine(first, dt.time(), dt.UTC)
    end = dt.datetime.combine(last + dt.timedelta(days=1), dt.time(), dt.UTC)
    days = {first + dt.timedelta(days=n): 0 for n in range((last - first).days + 1)}
    rows = connection.execute(
        sa.select(usage_log.c.at).where(
            usage_log.c.subject == subject, usage_log.c.at >= start, usage_log.c.at < end
        )
    )
    for (at,) in rows:
        day = as_utc(at).date()
        if day in days:
            days[day] += 1
    return days


@dataclass(frozen=True)
class EndpointCalls:
    """One endpoint's calls in a period: how many, how many failed, the rows served."""

    endpoint: str
    calls: int
    errors: int
    rows: int


def calls_by_endpoint(
    connection: sa.Connection, subject: str, since: dt.datetime
) -> list[EndpointCalls]:
    """API calls of ``subject`` since ``since`` per endpoint, most called first."""
    failed = sa.case((usage_log.c.status >= 400, 1), else_=0)
    rows = connection.execute(
        sa.select(
            usage_log.c.endpoint,
            sa.func.count().label("calls"),
            sa.func.sum(failed).label("errors"),
            sa.func.sum(usage_log.c.rows).label("rows"),
        )
        .where(usage_log.c.subject == subject, usage_log.c.at >= since)
        .group_by(usage_log.c.endpoint)
        .order_by(sa.func.count().desc(), usage_log.c.endpoint)
    )
    return [EndpointCalls(r.endpoint, r.calls, int(r.errors or 0), int(r.rows or 0)) for r in rows]
