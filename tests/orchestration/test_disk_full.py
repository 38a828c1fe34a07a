"""Issue 18's fault for real: the disk fills up while a refresh writes its new version.

``published/`` is a real tmpfs with room for the current version and about half of another, so
DuckDB runs out of space while the refresh writes its staging file. The failed publish leaves
nothing behind (no staging file, WAL or spill directory; the disk is as free as before) and
publishes nothing (the same current version, no change record, no event), and the server that
was running all along keeps answering from the current version. Once the disk has room, the
next refresh publishes, and the same server serves the new version without a restart.

Mounting needs root: as another user the test is skipped.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import PublishedDemo

from findata.api.app import create_app
from findata.control_plane import schema
from findata.control_plane.database import engine_for
from findata.orchestration.refresh import run_refresh
from findata.published.versions import current_version
from findata.settings import Settings, get_settings
from tests.api.server import serve, start_clock
from tests.orchestration.dagster_runs import step_errors
from tests.sources.landing_edits import add_price_day, next_session

# checked before the demo fixture is built, which takes minutes
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")

PAGE = 4096


def _pages(size: int) -> int:
    """``size`` bytes rounded up to whole pages (what a file takes on a tmpfs)."""
    return -(-size // PAGE) * PAGE


def _run(*command: str) -> None:
    """Run ``command``; fail the test with what it printed if it fails."""
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"{' '.join(command)}: {result.stderr}"


@contextmanager
def _tmpfs(directory: Path, size: int) -> Iterator[None]:
    """A tmpfs of ``size`` bytes mounted at ``directory`` until the block ends."""
    _run("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory))
    try:
        yield
    finally:
        # the server's DuckDB connections may still hold a version file open: detach lazily
        # then, so that removing the test's tmp directory works
        if subprocess.run(["umount", str(directory)], capture_output=True, check=False).returncode:
            _run("umount", "-l", str(directory))


def _control_plane(settings: Settings) -> dict[str, Any]:
    """The current version's label and how many change records and events there are."""
    with engine_for(settings.control_plane_url).connect() as connection:
        current = current_version(connection)
        return {
            "current": current.label if current else None,
            "records": connection.execute(
                sa.select(sa.func.count(schema.change_records.c.id))
            ).scalar_one(),
            "events": connection.execute(sa.select(sa.func.count(schema.events.c.id))).scalar_one(),
        }


def _without_limit(body: dict[str, Any]) -> dict[str, Any]:
    """A response body without the page limit its query asked for."""
    return {**body, "meta": {k: v for k, v in body["meta"].items() if k != "limit"}}


def _listing(published: Path) -> list[str]:
    """Every file under ``published`` (versions, parts, side files), relative to it."""
    return sorted(str(f.relative_to(published)) for f in published.rglob("*"))


def test_a_full_disk_fails_the_publish_cleanly_and_the_current_version_stays_served(
    two_week_old_demo: PublishedDemo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = two_week_old_demo.copy_to(tmp_path / "home")
    published = home / "published"
    aside = published.rename(tmp_path / "published-aside")
    published.mkdir()
    files = sorted(f for f in aside.rglob("*") if f.is_file())
    # a new trading day writes this year's prices again (versions share the other parts), about
    # as large as the current version's (all of them when the day opens a new year): room for
    # half of that fills the disk
    as_of = dt.date.fromisoformat(two_week_old_demo.scenarios["as_of"])
    new_year = next_session(as_of).year != as_of.year
    rewritten = [
        f for f in aside.glob("parts/prices__*.parquet") if new_year or "__recent__" in f.name
    ]
    written = sum(f.stat().st_size for f in rewritten)
    size = sum(_pages(f.stat().st_size) for f in files) + _pages(written // 2)

    monkeypatch.setenv("FINDATA_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))
    settings = get_settings()
    scenarios = two_week_old_demo.scenarios
    plain = scenarios["plain"]
    as_of = dt.date.fromisoformat(scenarios["as_of"])
    day = next_session(as_of)
    path = f"/v1/prices/{plain['ticker']}"
    query = {"start": (as_of - dt.timedelta(days=14)).isoformat(), "limit": 5000}
    # the same rows by another query, one the response cache cannot answer from before
    uncached = {**query, "limit": 4999}

    with _tmpfs(published, size):
        shutil.copytree(aside, published, dirs_exist_ok=True)
        clock = start_clock()
        with (
            serve(create_app(Settings(home=home), clock), clock) as running,
            running.client() as client,
        ):
            client.headers["X-API-Key"] = running.new_key("pro").key
            before = client.get(path, params=query)
            assert before.status_code == 200, before.text
            status = client.get("/v1/status").json()
            plane = _control_plane(settings)
            assert status["version"] == plane["current"] == two_week_old_demo.first.version
            assert before.json()["meta"]["data_through"] == as_of.isoformat()
            assert max(row["date"] for row in before.json()["data"]) == as_of.isoformat()

            # a new trading day: the refresh must publish, and the disk cannot hold it
            add_price_day(settings.landing_dir, day, [plain["entity_id"]])
            listing = _listing(published)
            free = shutil.disk_usage(published).free
            failed = run_refresh(settings)

            assert not failed.success and failed.version is None
            errors = step_errors(failed.run_id)
            assert list(errors) == ["publish"], errors
            assert "No space left on device" in errors["publish"], errors["publish"]
            # nothing left behind (staging file, .wal, .tmp) and the space given back
            assert _listing(published) == listing
            assert shutil.disk_usage(published).free == free
            # nothing published, and the current version still served
            assert _control_plane(settings) == plane
            assert client.get("/v1/status").json() == status
            for params in (query, uncached):
                again = client.get(path, params=params)
                assert again.status_code == 200, again.text
                assert _without_limit(again.json()) == _without_limit(before.json())

            # room on the disk: the next refresh publishes, and the same server serves it
            _run("mount", "-o", f"remount,size={size * 4}", str(published))
            published_now = run_refresh(settings)

            assert published_now.success and published_now.version, published_now
            after_plane = _control_plane(settings)
            assert after_plane["current"] == published_now.version != plane["current"]
            assert after_plane["records"] > plane["records"]
            assert after_plane["events"] == plane["events"] + 1
            added = set(_listing(published)) - set(listing)
            assert set(listing) <= set(_listing(published))  # the old version reads its parts
            assert f"{published_now.version}.duckdb" in added
            assert [p for p in added if p.startswith("parts/prices__recent__")]
            assert bool([p for p in added if p.startswith("parts/prices__history__")]) == new_year
            assert client.get("/v1/status").json()["version"] == published_now.version
            after = client.get(path, params=query)
            assert after.status_code == 200, after.text
            assert after.json()["meta"]["data_through"] == day.isoformat()
            assert after.json()["data"][:-1] == before.json()["data"]
            assert after.json()["data"][-1]["date"] == day.isoformat()
