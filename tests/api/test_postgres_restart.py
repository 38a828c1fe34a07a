"""A PostgreSQL restart costs a moment, not the service: ``findata serve`` (two workers, control
plane on a private PostgreSQL server, quota counters in the database or in Redis) answers four
clients while the database is restarted (``pg_ctl restart -m fast``, which ends every session)
twice: once under load, once while the clients pause (the workers' pooled connections sit idle
across it, and the next requests find them dead).

Every answer is a 200 or, during the outage, the spec's 500 ``internal_error``; no request
hangs or loses its connection; every request sent after the database is back is a 200, from the
same worker processes (nothing was restarted but PostgreSQL); and after a clean stop (SIGTERM:
the batched usage is written) the control plane holds exactly one usage-log row per 200 the
clients got, none lost and none written twice, and today's count holds every 200 and at most
every request sent."""

from __future__ import annotations

import datetime as dt
import itertools
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from findata.accounts.store import AccountStore
from findata.accounts.tables import usage_log
from findata.accounts.usage import usage_in_window
from findata.api.errors import InternalError
from findata.clock import SystemClock
from findata.control_plane.database import engine_for
from tests.api.server import copy_published_home, findata_serve
from tests.databases import PrivatePostgres, private_postgres

CLIENTS = 4
# the load before the first restart, after it, and after the second: this long, and until this
# many requests sent in the phase were answered (on a busy machine it takes longer)
LOAD_SECONDS, LOAD_ANSWERS = 2.0, 30
# How long after the restarted server accepts connections (pg_ctl -w returns) a request may
# still fail: none. A request sent after that meets nothing of the old server: each pooled
# connection is checked as it is taken (pre-ping) and replaced if dead. Only requests already
# inside the service during the outage may fail, and they started before this instant.
RECOVERED_WITHIN_SECONDS = 0.0
REQUEST_TIMEOUT_SECONDS = 15.0  # no answer in this long is a hang

#: where each parameter keeps the live quota counts (Redis: a database of the shared server no
#: other test uses; keys carry the control plane's namespace, new every run)
COUNTERS = {"database": None, "redis": "redis://127.0.0.1:6379/3"}


@dataclass(frozen=True)
class Answer:
    """One request as the client saw it (``status`` None: a transport error, in ``body``)."""

    started: float
    finished: float
    status: int | None
    body: Any


class Load:
    """Clients sending requests one after another, each to a new URL, until stopped; they can
    be paused (no request in flight) and resumed."""

    def __init__(self, url: str, key: str, path: str) -> None:
        self.url, self.key, self.path = url, key, path
        self.answers: list[Answer] = []
        self._numbers = itertools.count()
        self._state = threading.Condition()
        self._running, self._stopped, self._in_flight = True, False, 0
        self._threads = [threading.Thread(target=self._drive) for _ in range(CLIENTS)]

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        with self._state:
            self._stopped = True
            self._state.notify_all()
        for thread in self._threads:
            thread.join(timeout=REQUEST_TIMEOUT_SECONDS + 5)
        assert not any(thread.is_alive() for thread in self._threads), "a client hangs"

    def go_on(self, since: float) -> None:
        """Keep sending for ``LOAD_SECONDS``, and until ``LOAD_ANSWERS`` requests sent after
        ``since`` were answered (a minute at most)."""
        time.sleep(LOAD_SECONDS)
        deadline = time.monotonic() + 60
        while self.answered_since(since) < LOAD_ANSWERS and time.monotonic() < deadline:
            time.sleep(0.1)

    def answered_since(self, since: float) -> int:
        return sum(1 for answer in list(self.answers) if answer.started > since)

    def pause(self) -> None:
        """Return once no request is in flight and none will start until :meth:`resume`."""
        with self._state:
            self._running = False
            self._state.wait_for(lambda: self._in_flight == 0)  # each ends within its timeout

    def resume(self) -> None:
        with self._state:
            self._running = True
            self._state.notify_all()

    def _drive(self) -> None:
        with httpx.Client(
            base_url=self.url, headers={"X-API-Key": self.key}, timeout=REQUEST_TIMEOUT_SECONDS
        ) as http:
            while self._may_send():
                # a new URL every time: each answer is built (not a cached one) and counted
                limit = 1 + next(self._numbers)  # itertools.count: atomic under the GIL
                started = time.monotonic()
                try:
                    response = http.get(self.path, params={"limit": limit})
                    status, body = response.status_code, _body(response)
                except httpx.TransportError as error:
                    status, body = None, repr(error)
                self.answers.append(Answer(started, time.monotonic(), status, body))
                with self._state:
                    self._in_flight -= 1
                    self._state.notify_all()

    def _may_send(self) -> bool:
        """Wait while paused; False once stopped, else one more request is in flight."""
        with self._state:
            self._state.wait_for(lambda: self._running or self._stopped)
            if self._stopped:
                return False
            self._in_flight += 1
            return True


@pytest.fixture(params=COUNTERS)
def postgres(request: pytest.FixtureRequest) -> Iterator[tuple[PrivatePostgres, str]]:
    """A private PostgreSQL server (the test restarts it) and the counters' kind."""
    with private_postgres() as server:
        yield server, request.param


def test_the_service_rides_out_postgres_restarts(
    postgres: tuple[PrivatePostgres, str], published_home: Path, tmp_path: Path, scenarios: dict
) -> None:
    server, counters = postgres
    settings = copy_published_home(published_home, tmp_path / "home", server.url)
    store = AccountStore(engine_for(server.url), SystemClock())
    # Redistribution: the load's pace (hundreds of requests a second) stays within its
    # allowances; a Pro account would reach its hourly limit and answer 429s
    account = store.create_account("restart@example.com", "redistribution")
    key = store.create_key(account.id).key
    env = {
        **os.environ,
        "FINDATA_HOME": str(settings.home_dir),
        "FINDATA_DATABASE_URL": server.url,
        "FINDATA_USAGE_COUNTERS": counters,
    }
    env.pop("FINDATA_CACHE_URL", None)
    if COUNTERS[counters]:
        env["FINDATA_CACHE_URL"] = COUNTERS[counters]

    began = dt.datetime.now(dt.UTC)
    restarts: list[float] = []  # when the server accepted connections again after each
    with (
        findata_serve(env, 2) as (url, printed),
        Load(url, key, f"/v1/prices/{scenarios['plain']['ticker']}") as load,
    ):
        load.go_on(since=0.0)
        restarts.append(_restart(server))  # under load
        load.go_on(since=restarts[-1])
        load.pause()
        restarts.append(_restart(server))  # with idle connections in the pools
        load.resume()
        load.go_on(since=restarts[-1])
    # the server was stopped with SIGTERM: a clean stop writes the usage it had batched
    log = printed[0]
    answers = load.answers

    assert f"quota counters in {counters}" in log, log
    assert log.count("Started server process") == 2, log  # no worker was replaced
    statuses = Counter(answer.status for answer in answers)
    ok = statuses[200]
    assert all(answer.status is not None for answer in answers), _failures(answers, log, restarts)
    internal_error = InternalError().body()
    assert all(
        answer.status == 200 or (answer.status == 500 and answer.body == internal_error)
        for answer in answers
    ), _failures(answers, log, restarts)
    assert all(a.finished - a.started < REQUEST_TIMEOUT_SECONDS for a in answers)
    for back in restarts:
        after = [a for a in answers if a.started > back + RECOVERED_WITHIN_SECONDS]
        assert all(a.status == 200 for a in after), _failures(after, log, restarts)
        assert len(after) >= LOAD_ANSWERS, statuses

    logged, requests_today = _durable_usage(server.url, account.id, began)
    assert logged == ok, (statuses, logged)  # none lost, none written twice
    assert ok <= requests_today <= len(answers), (statuses, requests_today)


def _restart(server: PrivatePostgres) -> float:
    """Restart the server; when it accepts connections again."""
    server.restart()
    return time.monotonic()


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text


def _failures(answers: list[Answer], log: str, restarts: list[float]) -> str:
    """What a failed assertion shows: the answers that were not 200 (sent when, in seconds from
    the end of the nearest restart), and the end of the server's log."""
    failed = [
        (round(a.started - min(restarts, key=lambda r: abs(a.started - r)), 3), a.status, a.body)
        for a in answers
        if a.status != 200
    ]
    return f"{len(failed)} not 200: {failed[:10]}\nserver log (end):\n{log[-4000:]}"


def _durable_usage(url: str, account_id: str, day_of: dt.datetime) -> tuple[int, int]:
    """The usage-log rows of 200s, and the requests counted on the day of ``day_of``, on the
    control plane (on a connection of its own, not one pooled before the restarts)."""
    engine = sa.create_engine(url, poolclass=sa.NullPool)
    try:
        with engine.connect() as connection:
            logged = connection.execute(
                sa.select(sa.func.count()).where(
                    usage_log.c.subject == account_id, usage_log.c.status == 200
                )
            ).scalar_one()
            requests_today = usage_in_window(connection, account_id, day_of, "day")[0]
    finally:
        engine.dispose()
    return logged, requests_today
