"""Usage counters on real SQLite and PostgreSQL: UTC day and clock-hour windows, separate
subjects, and exact counts when many threads add at once."""

from __future__ import annotations

import datetime as dt
import threading

import sqlalchemy as sa

from findata.accounts.usage import add_usage, next_window_start, usage_in_window, window_start

NOON = dt.datetime(2026, 11, 22, 12, 15, 30, 250_000, tzinfo=dt.UTC)


def _add(engine: sa.Engine, subject: str, now: dt.datetime, requests: int, rows: int = 0) -> None:
    with engine.begin() as connection:
        add_usage(connection, subject, now, requests=requests, rows=rows)


def _usage(engine: sa.Engine, subject: str, now: dt.datetime) -> dict[str, tuple[int, int]]:
    with engine.connect() as connection:
        return {
            "day": usage_in_window(connection, subject, now, "day"),
            "hour": usage_in_window(connection, subject, now, "hour"),
        }


def test_window_starts_and_ends_in_utc() -> None:
    assert window_start(NOON, "day") == dt.datetime(2026, 11, 22, tzinfo=dt.UTC)
    assert window_start(NOON, "hour") == dt.datetime(2026, 11, 22, 12, tzinfo=dt.UTC)
    assert next_window_start(NOON, "day") == dt.datetime(2026, 11, 23, tzinfo=dt.UTC)
    assert next_window_start(NOON, "hour") == dt.datetime(2026, 11, 22, 13, tzinfo=dt.UTC)
    # 01:30 at UTC+2 is 23:30 UTC the day before: the windows are UTC ones
    late = dt.datetime(2026, 11, 23, 1, 30, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert window_start(late, "day") == dt.datetime(2026, 11, 22, tzinfo=dt.UTC)
    assert window_start(late, "hour") == dt.datetime(2026, 11, 22, 23, tzinfo=dt.UTC)
    assert next_window_start(late, "hour") == dt.datetime(2026, 11, 23, tzinfo=dt.UTC)
    assert next_window_start(late, "day") == dt.datetime(2026, 11, 23, tzinfo=dt.UTC)
    midnight = dt.datetime(2026, 11, 23, tzinfo=dt.UTC)
    assert window_start(midnight, "day") == midnight
    assert next_window_start(midnight, "day") == dt.datetime(2026, 11, 24, tzinfo=dt.UTC)


def test_counts_add_up_in_the_day_and_hour(engine: sa.Engine) -> None:
    assert _usage(engine, "acct_a", NOON) == {"day": (0, 0), "hour": (0, 0)}
    _add(engine, "acct_a", NOON, requests=1, rows=120)
    _add(engine, "acct_a", NOON + dt.timedelta(minutes=30), requests=3, rows=5)
    _add(engine, "acct_a", NOON + dt.timedelta(minutes=44, seconds=29), requests=2)
    expected = {"day": (6, 125), "hour": (6, 125)}
    assert _usage(engine, "acct_a", NOON) == expected
    assert _usage(engine, "acct_a", NOON.replace(minute=0, second=0, microsecond=0)) == expected


def test_a_new_hour_starts_a_new_hour_window_in_the_same_day(engine: sa.Engine) -> None:
    _add(engine, "acct_a", NOON, requests=4, rows=40)
    next_hour = next_window_start(NOON, "hour")
    assert _usage(engine, "acct_a", next_hour) == {"day": (4, 40), "hour": (0, 0)}
    _add(engine, "acct_a", next_hour, requests=1, rows=10)
    assert _usage(engine, "acct_a", next_hour) == {"day": (5, 50), "hour": (1, 10)}
    assert _usage(engine, "acct_a", NOON) == {"day": (5, 50), "hour": (4, 40)}


def test_a_new_day_resets_both_windows(engine: sa.Engine) -> None:
    last_minute = dt.datetime(2026, 11, 22, 23, 59, 59, tzinfo=dt.UTC)
    _add(engine, "acct_a", last_minute, requests=7, rows=70)
    next_day = next_window_start(last_minute, "day")
    assert _usage(engine, "acct_a", next_day) == {"day": (0, 0), "hour": (0, 0)}
    _add(engine, "acct_a", next_day, requests=2, rows=1)
    assert _usage(engine, "acct_a", next_day) == {"day": (2, 1), "hour": (2, 1)}
    assert _usage(engine, "acct_a", last_minute) == {"day": (7, 70), "hour": (7, 70)}


def test_subjects_are_counted_apart(engine: sa.Engine) -> None:
    _add(engine, "acct_a", NOON, requests=3, rows=30)
    _add(engine, "acct_b", NOON, requests=5, rows=50)
    _add(engine, "ip:192.0.2.1", NOON, requests=1)
    assert _usage(engine, "acct_a", NOON) == {"day": (3, 30), "hour": (3, 30)}
    assert _usage(engine, "acct_b", NOON) == {"day": (5, 50), "hour": (5, 50)}
    assert _usage(engine, "ip:192.0.2.1", NOON) == {"day": (1, 0), "hour": (1, 0)}
    assert _usage(engine, "acct_c", NOON) == {"day": (0, 0), "hour": (0, 0)}


def test_concurrent_adds_are_exact(engine: sa.Engine) -> None:
    threads, adds = 8, 50
    barrier = threading.Barrier(threads)
    failed: list[BaseException] = []

    def add_many() -> None:
        barrier.wait()
        try:
            for _ in range(adds):
                _add(engine, "acct_a", NOON, requests=1, rows=2)
        except BaseException as error:  # a database error here is a bug: report it whole
            failed.append(error)

    workers = [threading.Thread(target=add_many) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert failed == []
    total = threads * adds
    assert _usage(engine, "acct_a", NOON) == {"day": (total, 2 * total), "hour": (total, 2 * total)}
