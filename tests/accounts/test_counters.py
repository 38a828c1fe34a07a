"""The usage counters that admit requests, each kind (memory, Redis, database) on real SQLite and
PostgreSQL (and a real Redis): the same decisions, exact under threads, and the same durable
counts on the control plane once what is pending is written."""

from __future__ import annotations

import datetime as dt
import inspect
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from findata.accounts import counters as counters_package
from findata.accounts.counters import AnsweredCall, UsageCounters, usage_counters_for
from findata.accounts.tables import usage_log
from findata.accounts.usage import Limits, Reserved, add_usage, count_distinct, usage_in_window
from tests.databases import upgraded

REDIS = "redis://127.0.0.1:6379/0"
TEN = dt.datetime(2026, 11, 22, 10, 15, tzinfo=dt.UTC)
LIMITS = Limits(requests_per_day=10, requests_per_hour=4, rows_per_day=100, rows_per_hour=50)


@pytest.fixture(params=["memory", "redis", "database"])
def counters(request: pytest.FixtureRequest, engine: sa.Engine) -> Iterator[UsageCounters]:
    """Counters of each kind on this test's control plane."""
    made = usage_counters_for(request.param, engine, REDIS)
    yield made
    made.close()


def test_each_kind_is_one_module_behind_the_one_interface(counters: UsageCounters) -> None:
    """The counters of kind K are ``accounts/counters/K.py``'s, made from the interface (which
    refuses a backend missing a method); the interface's methods are what a backend offers."""
    assert isinstance(counters, UsageCounters)
    assert type(counters).__module__ == f"findata.accounts.counters.{counters.kind}"
    offered = {
        name
        for name, member in inspect.getmembers(type(counters), inspect.isfunction)
        if not name.startswith("_")
    }
    assert offered == UsageCounters.__abstractmethods__


def test_the_counters_folder_holds_the_interface_its_backends_and_their_writer() -> None:
    folder = Path(counters_package.__file__).parent
    modules = {path.stem for path in folder.glob("*.py")}
    assert modules == {"__init__", "interface", "batches", "memory", "database", "redis"}


def _durable(engine: sa.Engine, subject: str, at: dt.datetime) -> dict[str, tuple[int, int]]:
    with engine.connect() as connection:
        return {w: usage_in_window(connection, subject, at, w) for w in ("day", "hour")}


def test_reservations_refusals_and_rows(counters: UsageCounters, engine: sa.Engine) -> None:
    reserved = counters.reserve("acct", TEN, 3, LIMITS)
    assert reserved == Reserved(TEN, 3, 3, 0, 0)
    assert counters.reserve("acct", TEN, 2, LIMITS) == "requests_hour"  # whole or nothing
    assert counters.reserve("acct", TEN, 2, LIMITS) == "requests_hour_again"
    assert counters.usage("acct", TEN, "hour") == (3, 0)  # refusals use nothing
    counters.release("acct", TEN, 1)  # a request refused after admission
    assert counters.reserve("acct", TEN, 2, LIMITS) == Reserved(TEN, 4, 4, 0, 0)

    answered = AnsweredCall("prices", 200, 2, 60)
    assert counters.count_answer("acct", TEN, answered, ["7", "8"]) == (60, 2)
    next_hour = TEN + dt.timedelta(hours=1)
    assert counters.reserve("acct", TEN, 1, LIMITS) == "rows_hour"  # 60 of the hour's 50
    assert counters.reserve("acct", next_hour, 1, LIMITS) == Reserved(next_hour, 5, 1, 60, 0)
    counters.add_usage("acct", next_hour, requests=5, rows=40)  # the day's rows reach 100
    assert counters.reserve("acct", next_hour, 1, LIMITS) == "rows_day"
    assert counters.usage("acct", next_hour, "day") == (10, 100)
    assert counters.usage("other", TEN, "day") == (0, 0)  # subjects are separate

    counters.flush()
    assert _durable(engine, "acct", TEN) == {"day": (10, 100), "hour": (4, 60)}
    assert _durable(engine, "acct", next_hour) == {"day": (10, 100), "hour": (6, 40)}
    with engine.connect() as connection:
        calls = connection.execute(sa.select(usage_log.c.endpoint, usage_log.c.rows)).all()
        entities = count_distinct(connection, "acct", TEN.date(), "entity")
    assert [tuple(call) for call in calls] == [("prices", 60)]
    assert entities == 2


def test_the_day_limit_and_distinct_values(counters: UsageCounters, engine: sa.Engine) -> None:
    day_only = Limits(requests_per_day=10, requests_per_hour=None)
    counters.add_usage("acct", TEN - dt.timedelta(hours=3), requests=8)
    assert counters.reserve("acct", TEN, 3, day_only) == "requests_day"
    assert isinstance(counters.reserve("acct", TEN, 2, day_only), Reserved)
    assert counters.reserve("acct", TEN, 1, day_only) == "requests_day"
    tomorrow = TEN + dt.timedelta(days=1)
    assert counters.reserve("acct", tomorrow, 1, day_only) == Reserved(tomorrow, 1, 1, 0, 0)

    assert counters.add_distinct("acct", TEN.date(), "as_of", ["2024-01-01", "2024-01-02"]) == 2
    assert counters.add_distinct("acct", TEN.date(), "as_of", ["2024-01-02"]) == 2
    assert counters.add_distinct("acct", TEN.date(), "entity", ["1"]) == 1  # kinds are apart
    assert counters.count_distinct("acct", TEN.date(), "as_of") == 2
    assert counters.count_distinct("acct", tomorrow.date(), "as_of") == 0
    counters.flush()
    with engine.connect() as connection:
        assert count_distinct(connection, "acct", TEN.date(), "as_of") == 2


def test_usage_counted_before_start_is_read(engine: sa.Engine, counters: UsageCounters) -> None:
    with engine.begin() as connection:  # what an earlier run of the server wrote
        add_usage(connection, "acct", TEN, requests=9, rows=3)
    assert counters.usage("acct", TEN, "day") == (9, 3)
    assert counters.reserve("acct", TEN, 2, LIMITS) == "requests_day"
    assert counters.reserve("acct", TEN, 1, LIMITS) == "requests_hour"  # 9 of the hour's 4


def test_exact_when_many_threads_reserve(counters: UsageCounters, engine: sa.Engine) -> None:
    limits = Limits(requests_per_day=137, requests_per_hour=None)
    granted: list[int] = []
    start = threading.Barrier(8)

    def client() -> None:
        start.wait()
        for _ in range(25):
            if isinstance(counters.reserve("busy", TEN, 1, limits), Reserved):
                granted.append(1)

    threads = [threading.Thread(target=client) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(granted) == 137
    counters.flush()
    assert _durable(engine, "busy", TEN)["day"] == (137, 0)


def test_reset_forgets_a_subject(counters: UsageCounters, engine: sa.Engine) -> None:
    counters.reserve("ip:10.0.0.1", TEN, 4, LIMITS)
    counters.reserve("ip:10.0.0.1", TEN, 1, LIMITS)  # refused: counted as refused
    counters.reserve("acct", TEN, 1, LIMITS)
    counters.reset("ip:10.0.0.1")
    assert counters.usage("ip:10.0.0.1", TEN, "hour") == (0, 0)
    assert counters.reserve("ip:10.0.0.1", TEN, 4, LIMITS) == Reserved(TEN, 4, 4, 0, 0)
    assert counters.reserve("ip:10.0.0.1", TEN, 1, LIMITS) == "requests_hour"  # a first again
    counters.flush()
    assert _durable(engine, "ip:10.0.0.1", TEN)["hour"] == (4, 0)
    assert _durable(engine, "acct", TEN)["hour"] == (1, 0)


def test_a_failed_write_is_kept_for_the_next(engine: sa.Engine) -> None:
    counters = usage_counters_for("memory", engine)
    try:
        counters.reserve("acct", TEN, 2, LIMITS)
        with engine.begin() as connection:  # the control plane cannot take the batch now
            connection.execute(sa.text("ALTER TABLE usage_counters RENAME TO usage_counters_away"))
        assert counters.writer.flush() is False
        counters.reserve("acct", TEN, 1, LIMITS)
        with engine.begin() as connection:
            connection.execute(sa.text("ALTER TABLE usage_counters_away RENAME TO usage_counters"))
        assert counters.writer.flush() is True
        assert _durable(engine, "acct", TEN) == {"day": (3, 0), "hour": (3, 0)}
    finally:
        counters.close()


def test_redis_counters_are_shared_between_processes_of_one_control_plane(
    engine: sa.Engine, tmp_path_factory: pytest.TempPathFactory
) -> None:
    first = usage_counters_for("redis", engine, REDIS)
    second = usage_counters_for("redis", engine, REDIS)  # another worker or host
    elsewhere_url = f"sqlite:///{tmp_path_factory.mktemp('elsewhere')}/control.sqlite"
    from findata.control_plane.database import engine_for

    elsewhere = usage_counters_for("redis", engine_for(upgraded(elsewhere_url)), REDIS)
    try:
        assert first.reserve("acct", TEN, 3, LIMITS) == Reserved(TEN, 3, 3, 0, 0)
        assert second.reserve("acct", TEN, 1, LIMITS) == Reserved(TEN, 4, 4, 0, 0)
        assert first.reserve("acct", TEN, 1, LIMITS) == "requests_hour"
        assert second.reserve("acct", TEN, 1, LIMITS) == "requests_hour_again"
        assert elsewhere.usage("acct", TEN, "day") == (0, 0)  # another installation's Redis keys
        first.flush()
        second.flush()
        assert _durable(engine, "acct", TEN) == {"day": (4, 0), "hour": (4, 0)}
    finally:
        for counters in (first, second, elsewhere):
            counters.close()


def test_distinct_values_within_an_allowance_under_threads(counters: UsageCounters) -> None:
    """Free's index dates: at most the allowance of distinct values, exactly, however many
    requests ask at once; once it is used up, every value is refused (a known one too)."""
    accepted: list[int] = []
    start = threading.Barrier(8)

    def client(n: int) -> None:
        start.wait()
        for m in range(10):
            used = counters.add_distinct_within("acct", TEN.date(), "as_of", f"{n}-{m}", 51)
            if used is not None:
                accepted.append(used)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(accepted) == list(range(1, 52))
    assert counters.add_distinct_within("acct", TEN.date(), "as_of", "0-0", 51) is None
    assert counters.count_distinct("acct", TEN.date(), "as_of") == 51


def test_a_busy_day_is_read_back_from_the_control_plane(
    engine: sa.Engine, counters: UsageCounters
) -> None:
    """A day with thousands of entities already served (by an earlier process, before Redis
    lost its keys) is loaded whole the first time it is used."""
    with engine.begin() as connection:
        from findata.accounts.usage import add_distinct

        add_distinct(connection, "acct", TEN.date(), "entity", [str(n) for n in range(12_000)])
    assert counters.add_distinct("acct", TEN.date(), "entity", ["5", "12000"]) == 12_001
    many = [str(n) for n in range(11_000, 21_000)]  # an answer may name thousands at once
    assert counters.add_distinct("acct", TEN.date(), "entity", many) == 21_000


def test_an_answer_is_counted_on_what_the_control_plane_holds(
    engine: sa.Engine, counters: UsageCounters
) -> None:
    """An answer's rows and entities, counted on a day an earlier process had counted (its
    windows and entities loaded the first time they are used), naming more entities than one
    Redis script call takes: the same counts on every kind, and the same durable ones."""
    from findata.accounts.usage import add_distinct

    with engine.begin() as connection:
        add_usage(connection, "acct", TEN, requests=2, rows=30)
        add_distinct(connection, "acct", TEN.date(), "entity", [str(n) for n in range(1500)])
    answered = AnsweredCall("holdings", 200, 1, 7)
    named = [str(n) for n in range(1000, 3500)]  # 500 known, 2,000 new
    assert counters.count_answer("acct", TEN, answered, named) == (37, 3500)
    assert counters.count_answer("acct", TEN, answered, []) == (44, 3500)
    counters.flush()
    assert _durable(engine, "acct", TEN) == {"day": (2, 44), "hour": (2, 44)}
    with engine.connect() as connection:
        assert count_distinct(connection, "acct", TEN.date(), "entity") == 3500
