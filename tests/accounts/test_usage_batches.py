"""Batched usage on a real control plane (SQLite and PostgreSQL) whose answers get lost: a batch
whose commit went through but whose answer did not is not added twice when retried; batches
held back by an outage are written in order once it ends; a clean stop retries, and logs what
it could not write."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import sqlalchemy as sa

from findata.accounts.counters import batches as usage_batches
from findata.accounts.counters.batches import PendingUsage, UsageWriter
from findata.accounts.tables import usage_log, usage_writes
from findata.accounts.usage import usage_in_window, window_start
from findata.control_plane.database import engine_for
from tests.databases import upgraded

AT = dt.datetime(2026, 3, 2, 15, 30, tzinfo=dt.UTC)
SUBJECT = "acct_0123456789abcdef"


class FlakyControlPlane:
    """The real engine, but its connection fails as told: ``before`` failures are raised before
    the transaction (nothing written), ``after`` after its commit (written, answer lost)."""

    def __init__(self, engine: sa.Engine, before: int = 0, after: int = 0) -> None:
        self.engine = engine
        self.before = before
        self.after = after

    @contextmanager
    def begin(self) -> Iterator[sa.Connection]:
        if self.before:
            self.before -= 1
            raise _connection_lost()
        with self.engine.begin() as connection:
            yield connection
        if self.after:
            self.after -= 1
            raise _connection_lost()


def _connection_lost() -> sa.exc.OperationalError:
    return sa.exc.OperationalError("COMMIT", {}, ConnectionError("server closed the connection"))


def _one_call(pending: PendingUsage, at: dt.datetime = AT) -> None:
    """What the counters add for one answered request: both windows' counts and a log row."""
    for window in ("day", "hour"):
        pending.add_count((SUBJECT, window, window_start(at, window)), requests=1, rows=10)
    pending.add_call(
        {
            "subject": SUBJECT,
            "at": at,
            "endpoint": "prices",
            "status": 200,
            "requests": 1,
            "rows": 10,
        }
    )


def _recorded(engine: sa.Engine) -> tuple[int, int, int]:
    """The day's requests and rows on the control plane, and the log's rows."""
    with engine.connect() as connection:
        requests, rows = usage_in_window(connection, SUBJECT, AT, "day")
        calls = connection.execute(
            sa.select(sa.func.count()).where(usage_log.c.subject == SUBJECT)
        ).scalar_one()
    return requests, rows, calls


@pytest.fixture
def writer(control_plane_url: str) -> Iterator[UsageWriter]:
    """A writer that writes only when the test says (its thread waits an hour)."""
    written = UsageWriter(engine_for(upgraded(control_plane_url)), PendingUsage(), interval=3600)
    yield written
    written.engine = engine_for(control_plane_url)
    written.close()


def test_a_batch_whose_commit_answer_was_lost_is_not_added_twice(writer: UsageWriter) -> None:
    engine = writer.engine
    _one_call(writer.pending)
    writer.engine = FlakyControlPlane(engine, after=1)  # type: ignore[assignment]
    assert writer.flush() is False  # the commit went through; the writer cannot know
    assert _recorded(engine) == (1, 10, 1)
    assert writer.flush() is True  # the retry finds the batch written and adds nothing
    assert _recorded(engine) == (1, 10, 1)
    _one_call(writer.pending)  # the next batch is written as usual
    assert writer.flush() is True
    assert _recorded(engine) == (2, 20, 2)


def test_batches_held_back_by_an_outage_are_written_in_order_once_it_ends(
    writer: UsageWriter,
) -> None:
    engine = writer.engine
    writer.engine = FlakyControlPlane(engine, before=3)  # type: ignore[assignment]
    for n in range(3):  # each try fails; usage goes on being counted meanwhile
        _one_call(writer.pending, AT + dt.timedelta(seconds=n))
        assert writer.flush() is False
    assert _recorded(engine) == (0, 0, 0)
    assert writer.flush() is True
    assert _recorded(engine) == (3, 30, 3)
    with engine.connect() as connection:  # one batch held back, then the calls of two more
        last = connection.execute(
            sa.select(usage_writes.c.last_batch).where(
                usage_writes.c.writer == writer.pending.writer_id
            )
        ).scalar_one()
    assert last == 2


def test_a_clean_stop_retries_and_logs_what_it_could_not_write(
    writer: UsageWriter, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    engine = writer.engine
    monkeypatch.setattr(usage_batches, "CLOSE_RETRY_SECONDS", (0.0, 0.0))
    _one_call(writer.pending)
    writer.engine = FlakyControlPlane(engine, before=2)  # type: ignore[assignment]
    writer.close()  # the third try, after two waits, goes through
    assert _recorded(engine) == (1, 10, 1)

    stopped = UsageWriter(engine, PendingUsage(), interval=3600)
    _one_call(stopped.pending)
    stopped.engine = FlakyControlPlane(engine, before=10)  # type: ignore[assignment]
    with caplog.at_level(logging.ERROR, "findata.accounts.usage"):
        stopped.close()
    assert "usage lost at stop" in caplog.text and "1 calls, 2 window requests" in caplog.text
    assert _recorded(engine) == (1, 10, 1)
