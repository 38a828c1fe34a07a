"""Batched usage survives a crash but for its last second: ``findata serve`` (one worker, the
embedded default's counters in memory) is killed with SIGKILL while a client sends requests;
the control plane then holds every request answered more than a second before the kill, the
restarted server counts on from there, and a clean stop (SIGTERM) loses nothing."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import sqlalchemy as sa

from findata.accounts.store import AccountStore
from findata.accounts.tables import usage_log
from findata.accounts.usage import usage_in_window
from findata.clock import SystemClock
from findata.control_plane.database import engine_for
from tests.api.server import copy_published_home, free_port, wait_until_serving

LOST_AT_MOST_SECONDS = 1.0


@contextmanager
def _server(home: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``findata serve`` with one worker on ``home``; its URL and process (killed by the caller
    or stopped at the end)."""
    port = free_port()
    env = {**os.environ, "FINDATA_HOME": str(home)}
    for name in ("FINDATA_DATABASE_URL", "FINDATA_CACHE_URL", "FINDATA_USAGE_COUNTERS"):
        env.pop(name, None)
    findata = Path(sys.executable).parent / "findata"
    process = subprocess.Popen(
        [str(findata), "serve", "--port", str(port), "--workers", "1"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url, process)
        yield url, process
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(timeout=60)


def _drive(url: str, key: str, path: str, stop: threading.Event, answered: list[float]) -> None:
    """Requests one after another until ``stop`` or the server dies; when each 200 arrived."""
    with httpx.Client(base_url=url, headers={"X-API-Key": key}, timeout=10) as http:
        n = 0
        while not stop.is_set():
            n += 1
            try:  # a new URL every time: each answer is built and counted with its rows
                response = http.get(path, params={"limit": 1 + n % 50})
            except httpx.TransportError:
                return
            assert response.status_code == 200, response.text
            answered.append(time.monotonic())


def _durable_requests(url: str, account_id: str) -> tuple[int, int]:
    """The requests of today on the control plane, and the rows of the usage log."""
    engine = engine_for(url)
    with engine.connect() as connection:
        requests = usage_in_window(connection, account_id, dt.datetime.now(dt.UTC), "day")[0]
        calls = connection.execute(
            sa.select(sa.func.count()).where(usage_log.c.subject == account_id)
        ).scalar_one()
    return requests, calls


def test_a_killed_server_loses_at_most_its_last_second(
    published_home: Path, tmp_path: Path, scenarios: dict
) -> None:
    settings = copy_published_home(published_home, tmp_path / "home", None)
    store = AccountStore(engine_for(settings.control_plane_url), SystemClock())
    account = store.create_account("crash@example.com", "pro")
    key = store.create_key(account.id).key
    path = f"/v1/prices/{scenarios['plain']['ticker']}"

    answered: list[float] = []
    with _server(settings.home_dir) as (url, process):
        stop = threading.Event()
        driver = threading.Thread(target=_drive, args=(url, key, path, stop, answered))
        driver.start()
        time.sleep(3)  # real time: the writer's own schedule is what is under test
        process.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        driver.join(timeout=30)
        stop.set()
    requests, calls = _durable_requests(settings.control_plane_url, account.id)
    surely_written = sum(1 for at in answered if at < killed_at - LOST_AT_MOST_SECONDS)
    assert len(answered) > 20
    assert surely_written <= requests <= len(answered) + 1  # +1: one in flight at the kill
    assert surely_written <= calls <= len(answered) + 1

    with _server(settings.home_dir) as (url, _process):  # counting goes on from what was kept
        usage = httpx.get(f"{url}/v1/auth/usage", headers={"X-API-Key": key}).json()
        assert usage["requests_today"] == requests
        for n in range(5):
            response = httpx.get(
                f"{url}{path}", params={"limit": 60 + n}, headers={"X-API-Key": key}
            )
            assert response.status_code == 200
    # the clean stop (SIGTERM) above wrote everything it had counted
    assert _durable_requests(settings.control_plane_url, account.id) == (requests + 5, calls + 5)
