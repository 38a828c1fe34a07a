"""A newly published version is served on the next request, without a restart; a query paged
with cursors stays on the version its first page read (no skipped or repeated rows); a worker
closes the versions nobody reads any more, never one a request is reading, and all of them
when it stops."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest
import sqlalchemy as sa

from findata.api.app import create_app
from findata.api.published import KEEP_OLD_VERSIONS, PublishedData
from findata.control_plane.database import engine_for
from findata.control_plane.schema import versions
from findata.published.publish import contracts_published
from findata.published.versions import attach_version, current_version
from findata.settings import Settings
from tests.api.server import RunningApi, copy_published_home, serve, start_clock


@pytest.fixture
def own_api(published_home: Path, tmp_path: Path) -> Iterator[tuple[RunningApi, Settings]]:
    """A server on a copy of the published demo, so this test may publish beside it."""
    home = tmp_path / "home"
    shutil.copytree(published_home / "published", home / "published")
    with (
        sqlite3.connect(published_home / "control.sqlite") as source,
        sqlite3.connect(home / "control.sqlite") as copy,
    ):
        source.backup(copy)  # WAL mode: the file alone may miss committed pages
    shutil.copytree(published_home / "demo", home / "demo")
    settings = Settings(home=home)
    clock = start_clock()
    with serve(create_app(settings, clock), clock) as running:
        yield running, settings


def _publish_copy_without(settings: Settings, entity_id: int, since: str, number: int = 1) -> str:
    """Publish a new version: the current file minus one security's rows since ``since``
    (written the way publish writes: a new immutable file, then the version row)."""
    engine = engine_for(settings.control_plane_url)
    with engine.connect() as connection:
        current = current_version(connection)
    assert current is not None
    label = f"{current.label}-next{number}"
    target = settings.published_dir / f"{label}.duckdb"
    with duckdb.connect(str(target)) as data:  # a version holding its tables (as before parts)
        attach_version(data, settings.published_dir / current.file_name, "current")
        for contract in contracts_published():
            data.execute(f'CREATE TABLE "{contract.name}" AS FROM current."{contract.name}"')
        data.execute("DELETE FROM prices WHERE entity_id = ? AND date >= ?", [entity_id, since])
    with engine.begin() as connection:
        connection.execute(
            versions.insert().values(
                label=label,
                file_name=target.name,
                run_id="test",
                published_at=dt.datetime.now(dt.UTC),
                content_hash="0" * 64,
                data_through=current.data_through,
                row_counts=current.row_counts,
            )
        )
    return label


def _rows_from(
    client: httpx.Client, path: str, params: dict[str, Any], first: dict[str, Any]
) -> list[dict[str, Any]]:
    """The rows of a paged query: the first page's, then every page its cursors lead to."""
    rows, cursor = list(first["data"]), first["meta"]["next_cursor"]
    while cursor:
        page = client.get(path, params={**params, "cursor": cursor}).json()
        rows += page["data"]
        cursor = page["meta"]["next_cursor"]
    return rows


def _a_month_before(scenarios: dict) -> tuple[dict[str, Any], str]:
    """Query parameters of a month of prices ending two months before as_of, and its middle."""
    as_of = dt.date.fromisoformat(scenarios["as_of"])
    start, middle, end = (as_of - dt.timedelta(days=days) for days in (90, 75, 60))
    params = {"start": start.isoformat(), "end": end.isoformat(), "limit": 5}
    return params, middle.isoformat()


def test_new_versions_are_served_and_cursors_stay_on_theirs(
    own_api: tuple[RunningApi, Settings], scenarios: dict
) -> None:
    api, settings = own_api
    key = api.new_key("pro").key
    plain = scenarios["plain"]
    path = f"/v1/prices/{plain['ticker']}"
    params, middle = _a_month_before(scenarios)
    with api.client() as client:
        client.headers["X-API-Key"] = key
        first = client.get(path, params=params).json()
        whole_before = client.get(path, params={**params, "limit": 5000}).json()["data"]
        label = _publish_copy_without(settings, plain["entity_id"], middle)
        assert client.get("/v1/status").json()["version"] == label

        # the query paged from before the publish finishes on its own version
        assert _rows_from(client, path, params, first) == whole_before

        # a new query reads the new version
        after = client.get(path, params={**params, "limit": 5000}).json()["data"]
        assert after and max(r["date"] for r in after) < middle
        assert len(after) < len(whole_before)


def test_a_version_nobody_reads_is_closed_and_a_cursor_reopens_it(
    own_api: tuple[RunningApi, Settings], scenarios: dict
) -> None:
    api, settings = own_api
    published: PublishedData = api.app.state.published
    plain = scenarios["plain"]
    path = f"/v1/prices/{plain['ticker']}"
    params, middle = _a_month_before(scenarios)
    with api.client() as client:
        client.headers["X-API-Key"] = api.new_key("pro").key
        first = client.get(path, params=params).json()
        whole_before = client.get(path, params={**params, "limit": 5000}).json()["data"]
        old = client.get("/v1/status").json()["version"]
        new = _publish_copy_without(settings, plain["entity_id"], middle)
        client.get(path, params=params)  # served from the new version
        assert published.open_labels() == {old, new}  # the old one was read a moment ago

        api.clock.advance(dt.timedelta(seconds=settings.version_idle_seconds + 1))
        client.get(path, params=params)
        assert published.open_labels() == {new}

        # the query paged from before the publish reopens its version and finishes on it
        assert _rows_from(client, path, params, first) == whole_before
        assert published.open_labels() == {old, new}


def test_a_version_being_read_stays_open_until_released_and_idle(
    own_api: tuple[RunningApi, Settings], scenarios: dict
) -> None:
    api, settings = own_api
    published: PublishedData = api.app.state.published
    first = published.current()
    assert first is not None
    reading = published.lease(first)  # a request in flight on the first version
    labels = []
    for n in range(1, 5):  # four publishes, each read while it is current
        labels.append(
            _publish_copy_without(settings, scenarios["plain"]["entity_id"], f"2999-01-0{n}", n)
        )
        version = published.current()
        assert version is not None and version.label == labels[-1]
        published.lease(version).release()
    api.clock.advance(dt.timedelta(seconds=settings.version_idle_seconds + 1))
    # the in-flight request still reads its version, whatever was closed meanwhile
    assert published.open_labels() >= {first.label, labels[-1]}
    assert reading.cursor.execute("SELECT count(*) FROM prices").fetchone()[0] > 0
    # idle too long: the old versions close when a request ends; the one being read stays
    published.lease(published.current()).release()  # type: ignore[arg-type]
    assert published.open_labels() == {first.label, labels[-1]}
    reading.release()
    reading.release()  # a second release does nothing
    published.lease(published.current()).release()  # type: ignore[arg-type]
    assert published.open_labels() == {first.label, labels[-1]}  # just read: not idle yet
    api.clock.advance(dt.timedelta(seconds=settings.version_idle_seconds + 1))
    published.lease(published.current()).release()  # type: ignore[arg-type]
    assert published.open_labels() == {labels[-1]}


def test_at_most_two_old_versions_stay_open_before_they_are_idle(
    own_api: tuple[RunningApi, Settings], scenarios: dict
) -> None:
    api, settings = own_api
    published: PublishedData = api.app.state.published
    labels = []
    for n in range(1, 6):
        labels.append(
            _publish_copy_without(settings, scenarios["plain"]["entity_id"], f"2999-01-0{n}", n)
        )
        version = published.current()
        assert version is not None
        published.lease(version).release()
    assert published.open_labels() == set(labels[-1 - KEEP_OLD_VERSIONS :])


def test_a_cursor_on_a_version_no_longer_served_is_refused(
    own_api: tuple[RunningApi, Settings], scenarios: dict
) -> None:
    api, settings = own_api
    key = api.new_key("pro").key
    path = f"/v1/prices/{scenarios['plain']['ticker']}"
    with api.client() as client:
        client.headers["X-API-Key"] = key
        cursor = client.get(path, params={"limit": 2}).json()["meta"]["next_cursor"]
        engine = engine_for(settings.control_plane_url)
        with engine.connect() as connection:
            current = current_version(connection)
        assert current is not None
        # retention removed the file (versions are immutable, but not kept for ever)
        (settings.published_dir / current.file_name).rename(settings.home_dir / "gone.duckdb")
        _publish_copy_from(settings, settings.home_dir / "gone.duckdb")
        refused = client.get(path, params={"limit": 2, "cursor": cursor})
    assert refused.status_code == 400
    assert refused.json()["detail"].startswith("Invalid cursor: the data version")


def _publish_copy_from(settings: Settings, source: Path) -> None:
    engine = engine_for(settings.control_plane_url)
    with engine.connect() as connection:
        current = current_version(connection)
    assert current is not None
    shutil.copy(source, settings.published_dir / "replacement.duckdb")
    with engine.begin() as connection:
        connection.execute(
            versions.insert().values(
                label="replacement",
                file_name="replacement.duckdb",
                run_id="test",
                published_at=dt.datetime.now(dt.UTC),
                content_hash="1" * 64,
                data_through=current.data_through,
                row_counts=current.row_counts,
            )
        )
    assert sa  # the control plane is SQLAlchemy Core throughout


def test_a_stopped_server_holds_no_version_file_open(
    published_home: Path, tmp_path: Path, scenarios: dict
) -> None:
    home = tmp_path / "home"
    settings = copy_published_home(published_home, home, None)
    clock = start_clock()
    app = create_app(settings, clock)
    with serve(app, clock) as running, running.client() as client:
        key = running.new_key("pro").key
        answer = client.get(
            f"/v1/prices/{scenarios['plain']['ticker']}", headers={"X-API-Key": key}
        )
        assert answer.status_code == 200
        assert app.state.published.open_labels()
        assert _files_open_under(settings.published_dir)
    # the lifespan's end closed every version: nothing under published/ is open any more
    assert app.state.published.open_labels() == set()
    assert _files_open_under(settings.published_dir) == []


def _files_open_under(directory: Path) -> list[Path]:
    """The files under ``directory`` this process holds open (from /proc/self/fd)."""
    held = []
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = Path(os.readlink(fd))
        except OSError:  # closed meanwhile
            continue
        if target.is_relative_to(directory):
            held.append(target)
    return held


def test_closing_stops_and_waits_for_a_version_being_warmed(
    published_home: Path, tmp_path: Path
) -> None:
    # a worker told to stop as it starts: its process must not exit with DuckDB copying in a
    # thread (the C++ runtime aborts it, and the worker exits with an error)
    settings = copy_published_home(published_home, tmp_path / "home", None)
    published = PublishedData(
        engine_for(settings.control_plane_url),
        settings.published_dir,
        served_copy_bytes=512 * 2**20,
    )
    warming = published.warm_in_background()
    published.close()
    assert not warming.is_alive()
    assert published.open_labels() == set()
    assert _files_open_under(settings.published_dir) == []
