"""A newly published version is served on the next request, without a restart; a query paged
with cursors stays on the version its first page read (no skipped or repeated rows)."""

from __future__ import annotations

import datetime as dt
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
import sqlalchemy as sa

from api.app import create_app
from findata.control_plane.database import engine_for
from findata.control_plane.schema import versions
from findata.published import current_version
from findata.settings import Settings
from tests.api.server import RunningApi, serve, start_clock


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


def _publish_copy_without(settings: Settings, entity_id: int, since: str) -> str:
    """Publish a new version: the current file minus one security's rows since ``since``
    (written the way publish writes: a new immutable file, then the version row)."""
    engine = engine_for(settings.control_plane_url)
    with engine.connect() as connection:
        current = current_version(connection)
    assert current is not None
    label = current.label + "-next"
    target = settings.published_dir / f"{label}.duckdb"
    shutil.copy(settings.published_dir / current.file_name, target)
    with duckdb.connect(str(target)) as data:
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


def test_new_versions_are_served_and_cursors_stay_on_theirs(
    own_api: tuple[RunningApi, Settings], scenarios: dict
) -> None:
    api, settings = own_api
    key = api.new_key("pro").key
    plain = scenarios["plain"]
    path = f"/v1/prices/{plain['ticker']}"
    params = {"start": "2026-09-01", "end": "2026-09-30", "limit": 5}
    with api.client() as client:
        client.headers["X-API-Key"] = key
        first = client.get(path, params=params).json()
        whole_before = client.get(path, params={**params, "limit": 5000}).json()["data"]
        label = _publish_copy_without(settings, plain["entity_id"], "2026-09-15")
        assert client.get("/v1/status").json()["version"] == label

        # the query paged from before the publish finishes on its own version
        rows, cursor = list(first["data"]), first["meta"]["next_cursor"]
        while cursor:
            page = client.get(path, params={**params, "cursor": cursor}).json()
            rows += page["data"]
            cursor = page["meta"]["next_cursor"]
        assert rows == whole_before

        # a new query reads the new version
        after = client.get(path, params={**params, "limit": 5000}).json()["data"]
        assert after and max(r["date"] for r in after) < "2026-09-15"
        assert len(after) < len(whole_before)


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
