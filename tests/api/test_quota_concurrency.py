"""Exact counts under concurrency: ``findata serve --workers 4`` on PostgreSQL and on SQLite, with
many clients hammering one Free account at once: exactly the allowed number of requests
succeed, the rest are 429, and ``requests_today`` equals the successes."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from findata.accounts.store import AccountStore
from findata.accounts.tables import usage_counters
from findata.accounts.usage import window_start
from findata.clock import SystemClock
from findata.control_plane.database import engine_for
from findata.control_plane.schema import versions
from findata.settings import Settings
from tests.api.server import findata_serve
from tests.databases import fresh_postgres_database

CLIENTS, EACH = 8, 10  # 80 requests at once
ALLOWED = 37  # what is left of the day's 100 (under the hourly 40, so the day decides)


def _copy_home(published_home: Path, home: Path, database_url: str | None) -> Settings:
    """The published demo in a home of its own: the version files and, on the control plane
    asked for, the versions rows."""
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
    with engine_for(database_url).begin() as connection:
        connection.execute(versions.insert(), rows)
    return Settings(home=home, database_url=database_url)


@pytest.fixture(params=["postgresql", "sqlite"])
def served(
    request: pytest.FixtureRequest, published_home: Path, tmp_path: Path
) -> Iterator[tuple[str, Settings]]:
    """``findata serve --workers 4`` on a copy of the published demo."""
    with fresh_postgres_database() as url:
        settings = _copy_home(
            published_home, tmp_path / "home", url if request.param == "postgresql" else None
        )
        env = {**os.environ, "FINDATA_HOME": str(settings.home_dir)}
        env.pop("FINDATA_DATABASE_URL", None)
        if settings.database_url:
            env["FINDATA_DATABASE_URL"] = settings.database_url
        try:
            with findata_serve(env, workers=4) as (url_base, _printed):
                yield url_base, settings
        finally:
            engine_for(settings.control_plane_url).dispose()


def test_one_free_account_hammered_by_many_clients(
    served: tuple[str, Settings], scenarios: dict
) -> None:
    url, settings = served
    engine = engine_for(settings.control_plane_url)
    store = AccountStore(engine, SystemClock())
    account = store.create_account("hammer@example.com", "free")
    key = store.create_key(account.id).key
    now = dt.datetime.now(dt.UTC)
    with engine.begin() as connection:  # 63 requests used earlier today (the day row only)
        connection.execute(
            usage_counters.insert().values(
                subject=account.id,
                window="day",
                window_start=window_start(now, "day"),
                requests=100 - ALLOWED,
                rows=0,
            )
        )
    statuses: Counter[int] = Counter()
    lock = threading.Lock()
    start = threading.Barrier(CLIENTS)
    path = f"/v1/prices/{scenarios['plain']['ticker']}"

    def client() -> None:
        with httpx.Client(base_url=url, headers={"X-API-Key": key}, timeout=60) as http:
            start.wait()
            for _ in range(EACH):
                status = http.get(path, params={"limit": 1}).status_code
                with lock:
                    statuses[status] += 1

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert statuses == {200: ALLOWED, 429: CLIENTS * EACH - ALLOWED}
    usage = httpx.get(f"{url}/v1/auth/usage", headers={"X-API-Key": key}).json()
    assert usage["requests_today"] == 100  # 63 before + exactly the successes
