"""The local replica against a real server and real refreshes: after a refresh that adds a trading
day and restates a fundamental, a synced replica equals a fresh full pull, table by table; a sync
killed (SIGKILL) at random points and run again still ends equal; a replica whose cursor the feed
no longer keeps (a refresh 100 days later pruned its records) pulls everything again."""

from __future__ import annotations

import datetime as dt
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pytest
from conftest import PublishedDemo

from findata.api.app import create_app
from findata.clock import ManualClock, set_clock
from findata.contracts.datasets import load_dataset_contract
from findata.contracts.endpoints import load_endpoint_contract
from findata.orchestration.refresh import run_refresh
from findata.settings import Settings, get_settings
from findata.sources.readers.security_master import read_security_master
from findata_client import Client, Replica
from findata_client.replica import DATASETS, SyncReport
from tests.api.server import RunningApi, serve, start_clock
from tests.sources.landing_edits import (
    add_price_day,
    next_session,
    restate_latest_annual_revenue,
)

SYNC = Path(sys.executable).parent / "findata-python"


@dataclass
class Story:
    """One served home taken through a first sync, a refresh and the syncs after it."""

    api: RunningApi
    key: str
    settings: Settings
    folder: Path
    facts: dict[str, Any] = field(default_factory=dict)
    reports: dict[str, SyncReport] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def client(self) -> Client:
        return Client(api_key=self.key, base_url=self.api.url)

    def sync(self, path: Path) -> SyncReport:
        """One in-process sync of the replica at ``path``."""
        with self.client() as client:
            return Replica(path, client=client).sync()

    def fresh_pull(self, name: str) -> Path:
        """A new replica's first sync (a full pull) of what the server serves now."""
        path = self.folder / f"{name}.duckdb"
        started = time.monotonic()
        self.reports[name] = self.sync(path)
        self.seconds[name] = time.monotonic() - started
        return path

    @property
    def env(self) -> dict[str, str]:
        """The environment of ``findata-python sync`` as a user runs it."""
        return {**os.environ, "FINDATA_API_KEY": self.key, "FINDATA_BASE_URL": self.api.url}

    def refresh(self) -> None:
        outcome = run_refresh(self.settings)
        assert outcome.success and outcome.version, outcome


def tables(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every data table of a replica, rows in one order."""
    with duckdb.connect(str(path), read_only=True) as con:
        names = [
            n
            for (n,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
            if not n.startswith("_")
        ]
        return {n: con.execute(f'SELECT * FROM "{n}" ORDER BY ALL').fetchall() for n in names}


def assert_equal_replicas(synced: Path, fresh: Path) -> None:
    mine, theirs = tables(synced), tables(fresh)
    assert sorted(mine) == sorted(theirs)
    for name in theirs:
        missing = sorted(set(theirs[name]) - set(mine[name]))[:3]
        extra = sorted(set(mine[name]) - set(theirs[name]))[:3]
        assert mine[name] == theirs[name], f"{name}: missing {missing}, extra {extra}"


def test_each_table_deletes_by_the_columns_its_endpoint_filters_on() -> None:
    """A record's range is in its dataset's date column; the replica deletes by the served column
    of that name and re-pulls by the endpoint's entity_id, start and end."""
    for dataset in DATASETS.values():
        contract = load_endpoint_contract(dataset.endpoint)
        served = contract.fields.identity + contract.fields.selectable
        assert {dataset.entity_column, dataset.date_column} <= set(served), dataset.name
        assert {"entity_id", "start", "end"} <= {p.name for p in contract.parameters}
        for name in dataset.records:
            assert load_dataset_contract(name).change_feed.date_column == dataset.date_column


@pytest.fixture(scope="module")
def story(
    two_week_old_demo: PublishedDemo, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Story]:
    """The two-week-old demo served; a replica synced; a refresh adding a trading day and a
    restating filing; the replica synced again; a fresh full pull beside it."""
    folder = tmp_path_factory.mktemp("replica")
    home = two_week_old_demo.copy_to(folder / "home")
    scenarios = two_week_old_demo.scenarios
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FINDATA_HOME", str(home))
        patch.setenv("DAGSTER_HOME", str(home / "dagster"))
        settings = get_settings()
        clock = start_clock()
        with serve(create_app(settings, clock), clock) as api:
            story = Story(api, api.new_key("max").key, settings, folder)
            replica = folder / "replica.duckdb"
            story.reports["first"] = story.sync(replica)
            shutil.copy(replica, folder / "before.duckdb")

            as_of = dt.date.fromisoformat(scenarios["as_of"])
            day = next_session(as_of)
            gainer = scenarios["plain"]["entity_id"]
            add_price_day(settings.landing_dir, day, [gainer])
            master = read_security_master(
                settings.landing_dir / "security_master" / "security_master.csv"
            )
            row = master[master["ticker"] == scenarios["plain"]["ticker"]].iloc[0]
            period_end, accession = restate_latest_annual_revenue(
                settings.landing_dir, row["cik"].zfill(10), as_of
            )
            story.facts.update(
                day=day.isoformat(),
                gainer=gainer,
                issuer=int(row["issuer_entity_id"]),
                period_end=period_end,
                accession=accession,
            )
            story.refresh()

            started = time.monotonic()
            story.reports["after"] = story.sync(replica)
            story.seconds["after"] = time.monotonic() - started
            story.reports["again"] = story.sync(replica)
            story.fresh_pull("fresh")
            yield story


def test_the_first_sync_pulls_every_table(story: Story) -> None:
    first = story.reports["first"]
    assert first.full_pull and first.records_applied == 0
    assert set(first.tables) == {*DATASETS, "index_members", "index_events"}
    assert all(count > 0 for count in first.tables.values()), first.tables
    with story.client() as client:
        latest = client.get("/v1/changes", {"limit": 1})["meta"]["latest_cursor"]
    assert story.reports["again"].cursor == latest


def test_a_synced_replica_equals_a_fresh_full_pull_after_a_refresh(story: Story) -> None:
    after = story.reports["after"]
    assert not after.full_pull and after.records_applied >= 2  # prices and fundamentals at least
    assert after.rows_stored < story.reports["fresh"].rows_stored / 10  # only what changed
    again = story.reports["again"]
    assert (again.records_applied, again.rows_stored, again.full_pull) == (0, 0, False)
    replica = story.folder / "replica.duckdb"
    assert_equal_replicas(replica, story.folder / "fresh.duckdb")
    with duckdb.connect(str(replica), read_only=True) as con:
        new_day = con.execute(
            "SELECT count(*) FROM prices WHERE entity_id = ? AND date = ?",
            [story.facts["gainer"], story.facts["day"]],
        ).fetchone()
        restated = con.execute(
            "SELECT count(*) FROM fundamentals WHERE entity_id = ? AND accession = ?",
            [story.facts["issuer"], story.facts["accession"]],
        ).fetchone()
    assert new_day == (1,) and restated is not None and restated[0] >= 1


def test_a_replica_asked_to_hold_other_tables_starts_over(story: Story) -> None:
    path = story.folder / "indexes-only.duckdb"
    shutil.copy(story.folder / "fresh.duckdb", path)
    with story.client() as client:
        report = Replica(path, ["index"], client=client, indexes=["sp500"]).sync()
    assert report.full_pull and set(report.tables) == {"index_members", "index_events"}
    assert set(tables(path)) == {"index_members", "index_events"}  # no stale table stays
    with duckdb.connect(str(path), read_only=True) as con:
        kept = con.execute("SELECT DISTINCT upper(index) FROM index_members").fetchall()
    assert kept == [("SP500",)]


def _killed_sync(story: Story, path: Path, after_seconds: float) -> float | None:
    """``findata-python sync`` SIGKILLed ``after_seconds`` in: None if it was still running,
    else the seconds it took to finish."""
    started = time.monotonic()
    process = subprocess.Popen(
        [str(SYNC), "sync", str(path)],
        env=story.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        process.wait(timeout=after_seconds)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGKILL)
        process.wait()
        return None
    assert process.returncode == 0, process.stderr.read() if process.stderr else ""
    return time.monotonic() - started


def _completed_sync(story: Story, path: Path) -> float:
    started = time.monotonic()
    done = subprocess.run(
        [str(SYNC), "sync", str(path)], env=story.env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return time.monotonic() - started


def test_a_sync_killed_at_random_points_still_ends_equal(story: Story) -> None:
    """From the replica as it was before the refresh: the command killed anywhere in its run
    (starting, fetching a record's rows, committing), then run again to the end."""
    fresh = story.folder / "fresh.duckdb"
    measured = story.folder / "measured.duckdb"
    shutil.copy(story.folder / "before.duckdb", measured)
    whole = _completed_sync(story, measured)
    assert_equal_replicas(measured, fresh)
    chance = random.Random(20261124)
    killed = 0
    # until three runs were cut short (on a loaded machine a run may finish before its signal:
    # the kill points are drawn within the quickest whole run seen so far)
    for trial in range(12):
        path = story.folder / f"killed-{trial}.duckdb"
        shutil.copy(story.folder / "before.duckdb", path)
        finished = _killed_sync(story, path, chance.uniform(0.05, 0.7) * whole)
        if finished is None:
            killed += 1
        else:
            whole = min(whole, finished)
        _completed_sync(story, path)
        assert_equal_replicas(path, fresh)
        if killed == 3:
            break
    assert killed >= 2


def _pulling(path: Path) -> bool:
    """Whether the replica at ``path`` stopped inside a full pull (its target cursor is set)."""
    with duckdb.connect(str(path), read_only=True) as con:
        tables = {n for (n,) in con.execute("SHOW TABLES").fetchall()}
        if "_replica_state" not in tables:
            return False
        target = con.execute(
            "SELECT value FROM _replica_state WHERE key = 'pull_target'"
        ).fetchone()
    return target is not None


def test_a_full_pull_killed_then_resumed_ends_equal(story: Story) -> None:
    """The command's own full pull, timed, then killed at random points of it (a point may
    fall before the pull begins or after it ends: trials go on until two stopped inside it)."""
    fresh = story.folder / "fresh.duckdb"
    whole = _completed_sync(story, story.folder / "pulled-by-the-command.duckdb")
    assert_equal_replicas(story.folder / "pulled-by-the-command.duckdb", fresh)
    chance = random.Random(7)
    inside = 0
    for trial in range(6):
        path = story.folder / f"pull-killed-{trial}.duckdb"
        _killed_sync(story, path, chance.uniform(0.2, 0.9) * whole)
        inside += _pulling(path)
        _completed_sync(story, path)
        assert_equal_replicas(path, fresh)
        if inside == 2:
            break
    assert inside >= 1


def test_a_cursor_older_than_the_feed_pulls_everything_again(story: Story) -> None:
    """Last in this module (it refreshes the served home again): the replica as it was before
    the first refresh has unread records; a refresh published 100 days later prunes them, so its
    next sync gets 410 cursor_expired, pulls everything and continues from the newest record."""
    stale = story.folder / "stale.duckdb"
    shutil.copy(story.folder / "before.duckdb", stale)
    day = next_session(dt.date.fromisoformat(story.facts["day"]))
    add_price_day(story.settings.landing_dir, day, [story.facts["gainer"]])
    previous = set_clock(ManualClock(dt.datetime.now(dt.UTC) + dt.timedelta(days=100)))
    try:
        story.refresh()
    finally:
        set_clock(previous)
    with story.client() as client:
        oldest = client.get("/v1/changes", {"limit": 1})["data"][0]["id"]
    read_up_to = story.reports["first"].cursor
    assert read_up_to is not None and int(oldest[4:]) > int(read_up_to[4:]) + 1  # unread, pruned
    report = story.sync(stale)
    assert report.full_pull
    assert_equal_replicas(stale, story.fresh_pull("fresh-after-prune"))
    assert story.sync(stale).records_applied == 0
