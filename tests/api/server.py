"""API test fixtures (a pytest plugin, loaded by tests/conftest.py): the API over real HTTP, one
uvicorn server per session on a published demo (SQLite control plane) and one on PostgreSQL,
both with a ``ManualClock`` the tests move."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import httpx
import pytest
import sqlalchemy as sa
import uvicorn
from fastapi import FastAPI

from findata.accounts.counters import UsageCounters
from findata.accounts.store import AccountStore, IssuedKey
from findata.api.app import create_app
from findata.clock import ManualClock
from findata.control_plane.database import engine_for
from findata.control_plane.schema import versions
from findata.orchestration.refresh import run_refresh
from findata.published.versions import open_version
from findata.settings import Settings, get_settings
from tests.databases import fresh_postgres_database, upgraded
from tests.shared_builds import BUILD_MARKS, built_once

if TYPE_CHECKING:
    from conftest import Demo


@dataclass
class RunningApi:
    """A served app: its address, its control plane and the clock it reads."""

    url: str
    app: FastAPI
    clock: ManualClock

    @property
    def store(self) -> AccountStore:
        return self.app.state.accounts

    @property
    def counters(self) -> UsageCounters:
        """The live usage counts (a test counts usage "from earlier" through them, as the
        server would have)."""
        return self.app.state.counters

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30)

    def new_key(self, plan: str = "pro") -> IssuedKey:
        """A fresh account on ``plan`` with one active key."""
        account = self.store.create_account(f"{uuid.uuid4().hex[:12]}@example.com", plan)
        return self.store.create_key(account.id)


def free_port() -> int:
    """A loopback port no one listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def serve(app: FastAPI, clock: ManualClock, port: int | None = None) -> Iterator[RunningApi]:
    """Run ``app`` under a real uvicorn server on loopback (``port``, or a free one) until the
    block ends."""
    port = port or free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    running = RunningApi(f"http://127.0.0.1:{port}", app, clock)
    SERVING.append(running)
    try:
        yield running
    finally:
        SERVING.remove(running)
        server.should_exit = True
        thread.join(timeout=30)


#: the servers running now (the keyless quota of 127.0.0.1 is reset between tests)
SERVING: list[RunningApi] = []


@pytest.fixture(autouse=True)
def fresh_keyless_allowance() -> Iterator[None]:
    """Every test's keyless requests come from 127.0.0.1: give each test that address's own
    hourly and daily allowance, as separate clients would have (the quota tests set their own)."""
    yield
    for running in SERVING:
        running.counters.reset("ip:127.0.0.1")


@contextmanager
def findata_serve(
    env: dict[str, str], workers: int, *options: str, log: Path | None = None
) -> Iterator[tuple[str, list[str]]]:
    """``findata serve --workers N [options]`` as a user runs it, on a free port, until the block
    ends (then stopped with SIGTERM); yields its URL, then (for the caller's checks, after it
    stopped) what it printed. The output goes to a file (``log``, kept, when given: a test can
    show it when it fails): a pipe read only at the end fills up when the server logs much
    (tracebacks of an outage), and its next write would block."""
    findata = Path(sys.executable).parent / "findata"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    printed: list[str] = []
    with open(log, "w+") if log else tempfile.TemporaryFile("w+") as output:
        process = subprocess.Popen(
            [str(findata), "serve", "--port", str(port), "--workers", str(workers), *options],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            wait_until_serving(url, process)
            yield url, printed
        finally:
            process.terminate()
            process.wait(timeout=60)
            output.seek(0)
            printed.append(output.read())


def wait_until_serving(url: str, process: subprocess.Popen[Any]) -> None:
    """Return once the server started as ``process`` answers at ``url`` (fail if it exits or
    takes more than 90 s)."""
    deadline = time.monotonic() + 90
    while True:
        try:
            httpx.get(f"{url}/v1/status", timeout=2)
            return
        except httpx.TransportError:
            assert time.monotonic() < deadline and process.poll() is None, "no server"
            time.sleep(0.2)


def copy_published_home(published_home: Path, home: Path, database_url: str | None) -> Settings:
    """The published demo in a home of its own (for a server started as a command): the
    version files and, on the control plane asked for (SQLite under the home by default), the
    versions rows."""
    shutil.copytree(published_home / "published", home / "published")
    shutil.copytree(published_home / "demo", home / "demo")
    if database_url is None:
        with (
            sqlite3.connect(published_home / "control.sqlite") as source,
            sqlite3.connect(home / "control.sqlite") as copy,
        ):
            source.backup(copy)
        return Settings(home=home)
    source = engine_for(Settings(home=published_home).control_plane_url)
    with source.connect() as connection:
        rows = [dict(row._mapping) for row in connection.execute(sa.select(versions))]
    # the server would migrate it as it starts; the rows go in before
    with engine_for(upgraded(database_url)).begin() as connection:
        connection.execute(versions.insert(), rows)
    return Settings(home=home, database_url=database_url)


def start_clock() -> ManualClock:
    """A manual clock at the current time (so published dates read as they will in service)."""
    return ManualClock(dt.datetime.now(dt.UTC))


@pytest.fixture(scope="session")
def published_home(small_demo: Demo, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home with the small demo refreshed once: one published version, built once per test
    run; each worker's copy of it is its own (its servers write accounts and mail into it)."""

    def build(home: Path) -> None:
        shutil.copytree(small_demo.landing, home / "landing")
        shutil.copytree(small_demo.home / "demo", home / "demo")
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("FINDATA_HOME", str(home))
            upgraded(get_settings().control_plane_url)
            outcome = run_refresh(get_settings())
        assert outcome.success and outcome.version, outcome

    built, _ = built_once(tmp_path_factory, "published-home", build)
    home = tmp_path_factory.mktemp("published-home") / "home"
    # the Dagster instance is the build's run history, which no test of a copy reads
    shutil.copytree(built, home, ignore=shutil.ignore_patterns("dagster", *BUILD_MARKS))
    return home


@pytest.fixture(scope="session")
def scenarios(published_home: Path) -> dict[str, Any]:
    """The published demo's scenarios.json (DESIGN.md names its keys)."""
    return json.loads((published_home / "demo" / "scenarios.json").read_text())


@pytest.fixture(scope="session")
def api(published_home: Path) -> Iterator[RunningApi]:
    """The API on the published demo, control plane on SQLite."""
    clock = start_clock()
    with serve(create_app(Settings(home=published_home), clock), clock) as running:
        yield running


@pytest.fixture(scope="session")
def api_postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningApi]:
    """The API with its control plane on a real PostgreSQL database of its own."""
    clock = start_clock()
    with fresh_postgres_database() as url:
        settings = Settings(home=tmp_path_factory.mktemp("pg-home"), database_url=upgraded(url))
        with serve(create_app(settings, clock), clock) as running:
            yield running


@pytest.fixture(params=["sqlite", "postgresql"])
def any_api(request: pytest.FixtureRequest) -> RunningApi:
    """The same tests on both control planes."""
    return request.getfixturevalue("api" if request.param == "sqlite" else "api_postgres")


# Keys for the endpoint tests. Module-scoped, as each test file had them: every file keeps
# accounts of its own, so one file's usage never counts against another's (Free allows only 40
# requests an hour and 100 a day per account, contracts/plans.yaml).


@pytest.fixture(scope="module")
def pro_key(api: RunningApi) -> str:
    """A key of a fresh Pro account (one per test module)."""
    return api.new_key("pro").key


@pytest.fixture(scope="module")
def free_key(api: RunningApi) -> str:
    """A key of a fresh Free account (one per test module)."""
    return api.new_key("free").key


@pytest.fixture(scope="module")
def redistribution_key(api: RunningApi) -> str:
    """A key with room for many pages (Redistribution: 200 pages per query; one per module)."""
    return api.new_key("redistribution").key


@pytest.fixture(scope="module")
def published_db(published_home: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """The published version the API serves, read-only (the endpoint tests' oracle)."""
    (path,) = (published_home / "published").glob("*.duckdb")
    connection = open_version(path)
    yield connection
    connection.close()
