"""Usage counters in the control plane: every reservation and count is a transaction (row
locks on PostgreSQL, SQLite's write lock). Exact with any number of workers and hosts; the
slowest backend."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from findata.accounts import usage
from findata.accounts.counters.interface import AnsweredCall, CountersKind, UsageCounters
from findata.accounts.usage import Count, Limits, Refusal, Reserved, Window


class DatabaseCounters(UsageCounters):
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


def _midnight(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), dt.UTC)
