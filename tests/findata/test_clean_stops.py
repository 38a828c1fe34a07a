"""Clean stops (issue 22): ``findata serve`` and ``findata demo`` while serving, each started in a
process group of its own, get SIGTERM or SIGINT with a request in flight: that request is
answered 200, no new connection is taken, every process of the group is gone within the grace
period, the port is free and the exit status is 0. A second signal stops at once. A request
still running when the grace period ends is answered 503 and logged so, and the exit status
is the forced stop's (issue 42).

The request in flight is a real slow one: a Pro account at the last request of its day waits
2 s before its answer (the plans' ``daily_requests`` slow-down), its usage written beforehand
to the control plane the server counts in (``FINDATA_USAGE_COUNTERS=database``)."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from findata.accounts.counters.database import DatabaseCounters
from findata.accounts.store import AccountStore
from findata.clock import SystemClock
from findata.contracts.plans import plan
from findata.control_plane.database import engine_for
from findata.shutdown import FORCED_EXIT_STATUS
from tests.api.server import copy_published_home, free_port
from tests.findata.stopping import (
    command_env,
    command_group,
    port_is_free,
    send,
    wait_answering,
    wait_group_gone,
)

GRACE = 12.0  # seconds: room for the 2 s request and the workers' exit on a busy machine
SLOW_SECONDS = 2.0  # the wait of a Pro account's last request of the day (contracts/plans.yaml)
#: Free's wait at its last index as_of date of the day (contracts/plans.yaml): longer than
#: SHORT_GRACE by far
STALLED_SECONDS = 30.0
SHORT_GRACE = 3.0


@dataclass(frozen=True)
class WaitingKey:
    """A key whose next request waits before its answer, and how to see that the server has
    taken that request in (counted it on the control plane)."""

    key: str
    home: Path
    admitted: Callable[[DatabaseCounters], bool]

    def wait_until_admitted(self) -> None:
        """Return once the server counted the request: it is in its wait then. (A fixed pause
        guessed it, and on a busy machine the signal could come before the request arrived.)"""
        engine = engine_for(_control_plane(self.home))
        counters = DatabaseCounters(engine)
        deadline = time.monotonic() + 60
        try:
            while not self.admitted(counters):
                assert time.monotonic() < deadline, "the request never reached the server"
                time.sleep(0.05)
        finally:
            engine.dispose()


def _control_plane(home: Path) -> str:
    return f"sqlite:///{home.resolve() / 'control.sqlite'}"


def slow_key(home: Path) -> WaitingKey:
    """A Pro key whose account has used all but one request of today: its next answer waits
    ``SLOW_SECONDS``."""
    engine = engine_for(_control_plane(home))
    store = AccountStore(engine, SystemClock())
    issued = store.create_key(store.create_account("slow@example.com", "pro").id)
    allowance = plan("pro").requests_per_day
    DatabaseCounters(engine).add_usage(
        issued.account.id, dt.datetime.now(dt.UTC), requests=allowance - 1
    )
    engine.dispose()

    def admitted(counters: DatabaseCounters) -> bool:
        used, _ = counters.usage(issued.account.id, dt.datetime.now(dt.UTC), "day")
        return used >= allowance

    return WaitingKey(issued.key, home, admitted)


def stalled_key(home: Path) -> WaitingKey:
    """A Free key whose account has asked for 50 index ``as_of`` dates today: its request
    for a 51st waits ``STALLED_SECONDS`` before its answer."""
    engine = engine_for(_control_plane(home))
    store = AccountStore(engine, SystemClock())
    issued = store.create_key(store.create_account("stalled@example.com", "free").id)
    dates = [(dt.date(2024, 1, 1) + dt.timedelta(days=n)).isoformat() for n in range(50)]
    DatabaseCounters(engine).add_distinct(
        issued.account.id, dt.datetime.now(dt.UTC).date(), "as_of", dates
    )
    engine.dispose()

    def admitted(counters: DatabaseCounters) -> bool:
        today = dt.datetime.now(dt.UTC).date()
        return counters.count_distinct(issued.account.id, today, "as_of") > len(dates)

    return WaitingKey(issued.key, home, admitted)


class InFlight:
    """A request sent on a thread of its own: its answer and when it came."""

    def __init__(
        self, url: str, key: str, path: str = "/v1/search", params: dict[str, str] | None = None
    ) -> None:
        self.answer: httpx.Response | None = None
        self.error: BaseException | None = None
        self.answered_at = 0.0
        self._thread = threading.Thread(
            target=self._send, args=(f"{url}{path}", key, params or {}), daemon=True
        )
        self._thread.start()

    def _send(self, url: str, key: str, params: dict[str, str]) -> None:
        try:
            self.answer = httpx.get(
                url, params={"limit": 1, **params}, headers={"X-API-Key": key}, timeout=60
            )
        except BaseException as error:  # the test reports it
            self.error = error
        self.answered_at = time.monotonic()

    def result(self) -> httpx.Response:
        self._thread.join(timeout=60)
        assert self.error is None, repr(self.error)
        assert self.answer is not None
        return self.answer


def stop_with_request_in_flight(
    args: list[str], home: Path, port: int, signum: int, to_group: bool, log: Path
) -> None:
    """Start ``findata <args>`` serving on ``port``, send a slow request, signal, and check the
    clean stop."""
    key = slow_key(home)
    url = f"http://127.0.0.1:{port}"
    env = command_env(home, GRACE, usage_counters="database")
    with log.open("wb") as output, command_group(args, env, output) as process:
        wait_answering(f"{url}/healthz", process)
        in_flight = InFlight(url, key.key)
        key.wait_until_admitted()
        signalled_at = time.monotonic()
        send(process, signum, to_group)
        time.sleep(0.3)
        with pytest.raises(httpx.TransportError):  # no new work once the stop is asked
            httpx.get(f"{url}/healthz", timeout=2)
        answer = in_flight.result()
        assert answer.status_code == 200, answer.text
        assert in_flight.answered_at > signalled_at  # it was in flight when the signal came
        assert answer.elapsed.total_seconds() >= SLOW_SECONDS - 0.1
        gone_after = wait_group_gone(process, GRACE)
        assert process.returncode == 0, log.read_text()[-3000:]
    assert gone_after < GRACE
    assert port_is_free(port)


@pytest.fixture
def serve_home(published_home: Path, tmp_path: Path) -> Path:
    """The published demo in a home of its own (SQLite control plane)."""
    home = tmp_path / "home"
    copy_published_home(published_home, home, None)
    return home


@pytest.mark.parametrize(
    ("workers", "signum", "to_group"),
    [
        (1, signal.SIGTERM, False),
        (1, signal.SIGINT, True),
        (2, signal.SIGTERM, False),
        (2, signal.SIGINT, True),
        (2, signal.SIGTERM, True),
    ],
    ids=[
        "1-worker-sigterm",
        "1-worker-sigint-group",
        "2-workers-sigterm",
        "2-workers-sigint-group",
        "2-workers-sigterm-group",
    ],
)
def test_serve_stops_cleanly_with_a_request_in_flight(
    serve_home: Path, tmp_path: Path, workers: int, signum: int, to_group: bool
) -> None:
    port = free_port()
    args = ["serve", "--port", str(port), "--workers", str(workers), "--webhooks"]
    stop_with_request_in_flight(args, serve_home, port, signum, to_group, tmp_path / "serve.log")


@pytest.mark.parametrize("workers", [1, 2])
def test_a_second_signal_stops_serve_at_once(
    serve_home: Path, tmp_path: Path, workers: int
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = command_env(serve_home, 60, usage_counters="database")
    args = ["serve", "--port", str(port), "--workers", str(workers)]
    key = slow_key(serve_home)
    with (tmp_path / "serve.log").open("wb") as output, command_group(args, env, output) as process:
        wait_answering(f"{url}/healthz", process)
        in_flight = InFlight(url, key.key)
        key.wait_until_admitted()
        process.send_signal(signal.SIGTERM)
        time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        # long before the request's answer, let alone the 60 s grace period
        assert wait_group_gone(process, 1.0) < 1.0
        assert process.returncode == FORCED_EXIT_STATUS
        in_flight._thread.join(timeout=10)
        assert in_flight.answer is None  # abandoned: the connection closed unanswered
    assert port_is_free(port)


def test_demo_while_serving_stops_cleanly_with_a_request_in_flight(
    published_home: Path, tmp_path: Path
) -> None:
    """``findata demo`` on a home whose landing was refreshed already: nothing runs again, it
    serves (with the delivery worker beside the API) until the signal."""
    home = tmp_path / "home"
    shutil.copytree(published_home, home, ignore=shutil.ignore_patterns("dagster"))
    port = free_port()
    stop_with_request_in_flight(
        ["demo", "--port", str(port)], home, port, signal.SIGTERM, False, tmp_path / "demo.log"
    )


@pytest.mark.parametrize("workers", [1, 2])
def test_a_request_the_grace_period_cuts_is_answered_503_and_serve_exits_non_zero(
    serve_home: Path, tmp_path: Path, workers: int
) -> None:
    """docs/operating.md, "Stopping": past the grace period the command exits 1. The request
    still running then is answered 503 ``service_unavailable`` (not uvicorn's 500), and its
    access line says 503."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    key = stalled_key(serve_home)
    env = command_env(serve_home, SHORT_GRACE, usage_counters="database", log_format="json")
    args = ["serve", "--port", str(port), "--workers", str(workers)]
    log = tmp_path / "serve.log"
    with log.open("wb") as output, command_group(args, env, output) as process:
        wait_answering(f"{url}/healthz", process)
        index_path = "/v1/index/sp500"
        in_flight = InFlight(url, key.key, index_path, {"as_of": "2024-03-01"})
        key.wait_until_admitted()  # the request is in its 30 s wait now
        signalled_at = time.monotonic()
        process.send_signal(signal.SIGTERM)
        answer = in_flight.result()
        assert in_flight.answered_at - signalled_at < SHORT_GRACE  # cut, not waited for
        assert answer.status_code == 503, answer.text
        assert answer.json() == {
            "error": "service_unavailable",
            "code": "service_unavailable",
            "status": 503,
            "detail": "The server stopped before this request finished. Retry it.",
        }
        wait_group_gone(process, SHORT_GRACE + 5)
        assert process.returncode == FORCED_EXIT_STATUS, log.read_text()[-3000:]
    assert port_is_free(port)
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    access = [
        (line["route"], line["status"])
        for line in lines
        if line["logger"] == "findata.api.access" and line["route"] != "/healthz"
    ]
    assert access == [("/v1/index/{index_name}", 503)]
    # uvicorn says it cut the request; no traceback of a 500 follows
    errors = [line["message"] for line in lines if line["level"] == "error"]
    assert errors == ["Cancel 1 running task(s), timeout graceful shutdown exceeded"]
