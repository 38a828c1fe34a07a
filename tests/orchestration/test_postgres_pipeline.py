"""The pipeline on a PostgreSQL control plane: Dagster's instance in the same database (schema
``dagster``), nothing of it as SQLite under the home; publishers on several hosts serialised by
the advisory lock, with change records and events committed in id order.

One refresh of the small demo (on a fresh database) is shared by the module; the lock tests then
publish from copies of its build warehouse whose marts they change, in processes of their own.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import httpx
import pytest
import sqlalchemy as sa
import yaml
from conftest import Demo

from findata.change_cursor import decode_change_cursor
from findata.control_plane import schema
from findata.control_plane.database import engine_for
from findata.orchestration.dagster_instance import (
    DAGSTER_SCHEMA,
    POSTGRES_URL_ENV,
    dagster_postgres_url,
    instance_config,
)
from findata.orchestration.refresh import RefreshOutcome, run_refresh
from findata.published.bucket import PublishedBucket, version_parts_in_bucket
from findata.published.lock import PUBLISH_LOCK_KEY
from findata.published.versions import current_version, current_version_at, read_part_files
from findata.settings import Settings, get_settings
from tests.api.server import free_port
from tests.databases import fresh_postgres_database, upgraded
from tests.s3_server import AWS_ENV, s3_server

BUCKET = "findata-pipeline-hosts"

ROOT = Path(__file__).parents[2]
BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class RefreshedOnPostgres:
    """A home refreshed once with its control plane (and so Dagster) on a fresh database."""

    home: Path
    url: str
    outcome: RefreshOutcome


@pytest.fixture(scope="module")
def refreshed(
    small_demo: Demo, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RefreshedOnPostgres]:
    with fresh_postgres_database() as url:
        upgraded(url)
        home = tmp_path_factory.mktemp("postgres-pipeline") / "home"
        shutil.copytree(small_demo.landing, home / "landing")
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("FINDATA_HOME", str(home))
            patch.setenv("FINDATA_DATABASE_URL", url)
            patch.setenv("DAGSTER_HOME", str(home / "dagster"))
            outcome = run_refresh(get_settings())
        yield RefreshedOnPostgres(home, url, outcome)


def _engine(url: str) -> sa.Engine:
    return engine_for(url)


def test_the_instance_config_names_no_secret_and_reaches_postgres_through_psycopg2() -> None:
    secret_url = "postgresql+psycopg://findata:s3cret@db.internal:6543/findata?sslmode=require"
    settings = Settings(home=Path("/srv/findata"), database_url=secret_url)
    config = instance_config(settings)
    assert config["storage"] == {"postgres": {"postgres_url": {"env": POSTGRES_URL_ENV}}}
    assert POSTGRES_URL_ENV == "FINDATA_DAGSTER_POSTGRES_URL"
    assert "s3cret" not in yaml.safe_dump(config)
    url = sa.make_url(dagster_postgres_url(secret_url))
    assert url.drivername == "postgresql+psycopg2" and url.password == "s3cret"
    assert (url.host, url.port, url.database) == ("db.internal", 6543, "findata")
    assert url.query == {"sslmode": "require", "options": f"-csearch_path={DAGSTER_SCHEMA}"}
    # SQLite default: Dagster's own storage (SQLite files in the Dagster home); the rest of
    # the file is the repository's template
    sqlite = instance_config(Settings(home=Path("/srv/findata")))
    assert "storage" not in sqlite
    assert sqlite == yaml.safe_load((Path(__file__).parents[2] / "dagster.yaml").read_text())


def test_a_refresh_on_postgresql_records_its_run_in_dagster_s_postgres_tables(
    refreshed: RefreshedOnPostgres,
) -> None:
    outcome = refreshed.outcome
    assert outcome.success and outcome.version is not None, outcome
    with _engine(refreshed.url).connect() as connection:
        runs = connection.execute(
            sa.text(f"SELECT run_id, status FROM {DAGSTER_SCHEMA}.runs")
        ).all()
        steps = connection.scalar(
            sa.text(
                f"SELECT count(*) FROM {DAGSTER_SCHEMA}.event_logs WHERE run_id = :run "
                "AND dagster_event_type = 'STEP_SUCCESS'"
            ),
            {"run": outcome.run_id},
        )
        public = set(sa.inspect(connection).get_table_names(schema="public"))
    assert [(r.run_id, r.status) for r in runs] == [(outcome.run_id, "SUCCESS")]
    assert steps and steps > 3
    # the control plane's tables are where they were; Dagster's are not among them
    assert {"versions", "change_records", "events"} <= public and "runs" not in public
    dagster_home = refreshed.home / "dagster"
    config = yaml.safe_load((dagster_home / "dagster.yaml").read_text())
    assert "postgres" in config["storage"]
    # nothing of Dagster's storage as SQLite under the home
    assert not list(dagster_home.rglob("*.db")), list(dagster_home.rglob("*"))
    assert not (dagster_home / "history").exists() and not (dagster_home / "schedules").exists()


def test_findata_ui_runs_the_webserver_and_the_daemon_on_postgres_without_the_yaml_warning(
    refreshed: RefreshedOnPostgres, tmp_path: Path
) -> None:
    # started from a folder holding a dagster.yaml: `dagster dev` would warn that it is ignored
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    port = free_port()
    log = tmp_path / "ui.log"
    env = {**os.environ, "FINDATA_HOME": str(refreshed.home), "FINDATA_DATABASE_URL": refreshed.url}
    env["FINDATA_SCHEDULED_REFRESH"] = "false"  # no sensor run beside the one refresh counted
    with log.open("w") as output:
        ui = subprocess.Popen(
            [str(BIN / "findata"), "ui", "--port", str(port)],
            cwd=tmp_path,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        served, heartbeats = False, 0
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not (served and heartbeats):
            assert ui.poll() is None, log.read_text()[-4000:]
            try:
                served = httpx.get(f"http://127.0.0.1:{port}/server_info", timeout=2).is_success
            except httpx.TransportError:
                served = False
            with _engine(refreshed.url).connect() as connection:
                heartbeats = connection.scalar(
                    sa.text(
                        "SELECT count(*) FROM information_schema.tables WHERE table_schema = "
                        f"'{DAGSTER_SCHEMA}' AND table_name = 'daemon_heartbeats'"
                    )
                ) and connection.scalar(
                    sa.text(f"SELECT count(*) FROM {DAGSTER_SCHEMA}.daemon_heartbeats")
                )
            time.sleep(0.5)
        assert served and heartbeats, log.read_text()[-4000:]
        # the run the refresh recorded is the one the UI's instance holds
        graphql = httpx.post(
            f"http://127.0.0.1:{port}/graphql",
            json={"query": "{ runsOrError { ... on Runs { results { runId status } } } }"},
            timeout=30,
        ).json()
        runs = graphql["data"]["runsOrError"]["results"]
        assert [(r["runId"], r["status"]) for r in runs] == [(refreshed.outcome.run_id, "SUCCESS")]
    finally:
        _stop_group(ui)
    text = log.read_text()
    assert "Serving dagster-webserver" in text
    assert "Found a dagster instance configuration" not in text, text
    assert not list((refreshed.home / "dagster").rglob("*.db"))


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group started for the test, SIGKILL to what is left after 15 s
    (``dagster dev``'s children may outlive a SIGTERM: issue 22's concern, not this test's)."""
    group = os.getpgid(process.pid)
    os.killpg(group, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=15)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    process.wait(timeout=15)


# ---- the publish lock -------------------------------------------------------------------------


def _publisher_home(
    refreshed: RefreshedOnPostgres, target: Path, volume_bump: int, *, shared_folder: bool = True
) -> Path:
    """A pipeline host's home: its own copy of the refreshed build warehouse, whose prices mart
    gets ``volume_bump`` more shares on its last day (a new build's content), publishing into the
    refreshed home's published folder (``shared_folder``: one store for every host) or into a
    folder of its own (the working copy of a host publishing to the bucket)."""
    (target / "build").mkdir(parents=True)
    warehouse = target / "build" / "warehouse.duckdb"
    shutil.copyfile(refreshed.home / "build" / "warehouse.duckdb", warehouse)
    with duckdb.connect(str(warehouse)) as con:
        con.execute(
            "UPDATE marts.prices SET volume = volume + ? "
            "WHERE date = (SELECT max(date) FROM marts.prices)",
            [volume_bump],
        )
    if shared_folder:
        (target / "published").symlink_to(refreshed.home / "published", target_is_directory=True)
    return target


def _start_publisher(
    home: Path, url: str, log: Path, settings: dict[str, str]
) -> subprocess.Popen[bytes]:
    env = {**os.environ, **settings, "FINDATA_HOME": str(home), "FINDATA_DATABASE_URL": url}
    with log.open("w") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.published.publisher"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )


def _lock_waiters(connection: sa.Connection) -> int:
    """Sessions of this database waiting for the publish lock."""
    return int(
        connection.scalar(
            sa.text(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
                "AND classid = :high AND objid = :low AND objsubid = 1 AND database = "
                "(SELECT oid FROM pg_database WHERE datname = current_database())"
            ),
            {"high": PUBLISH_LOCK_KEY >> 32, "low": PUBLISH_LOCK_KEY & 0xFFFFFFFF},
        )
    )


def _version_count(url: str) -> int:
    with _engine(url).connect() as connection:
        return int(connection.scalar(sa.select(sa.func.count()).select_from(schema.versions)))


@dataclass
class Race:
    """Two publishers started while the test held the lock, and what was seen meanwhile."""

    results: list[dict[str, object]]
    logs: list[str]
    #: versions while both waited / after both ended
    versions_while_held: int
    versions_after: int
    #: how many were seen waiting after the test let go (1: one published, the other waited)
    waiters_after_release: set[int]


def _race(
    refreshed: RefreshedOnPostgres,
    homes: list[Path],
    logs_dir: Path,
    settings: dict[str, str] | None = None,
) -> Race:
    """Hold the publish lock, start a publisher per home (with ``settings`` in its environment),
    see each wait for it, let go, and watch them go through one after the other."""
    url = refreshed.url
    admin = sa.create_engine(url, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)
    logs = [logs_dir / f"publisher-{n}.log" for n in range(len(homes))]
    processes: list[subprocess.Popen[bytes]] = []
    try:
        with admin.connect() as holder, admin.connect() as watcher:
            holder.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": PUBLISH_LOCK_KEY})
            before = _version_count(url)
            for home, log in zip(homes, logs, strict=True):
                processes.append(_start_publisher(home, url, log, settings or {}))
                deadline = time.monotonic() + 120
                while _lock_waiters(watcher) < len(processes):
                    assert time.monotonic() < deadline, "the publisher never waited for the lock"
                    for process, text in zip(processes, logs, strict=False):
                        assert process.poll() is None, (
                            f"a publisher ended without waiting for the lock: {text.read_text()}"
                        )
                    time.sleep(0.05)
            held = _version_count(url)
            assert held == before
            holder.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": PUBLISH_LOCK_KEY})
            seen: set[int] = set()
            deadline = time.monotonic() + 600
            while any(p.poll() is None for p in processes) and time.monotonic() < deadline:
                seen.add(_lock_waiters(watcher))
                time.sleep(0.02)
        outputs = [p.communicate(timeout=60)[0] for p in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
        admin.dispose()
    for process, log in zip(processes, logs, strict=True):
        assert process.returncode == 0, log.read_text()[-4000:]
    return Race(
        [json.loads(out) for out in outputs],
        [log.read_text() for log in logs],
        held,
        _version_count(url),
        seen,
    )


def _assert_committed_in_id_order(url: str) -> None:
    """Versions' ids follow their publication; each version's change records follow the
    previous one's; each event's cursor range holds exactly its version's records and starts
    where the previous event's ended or later (a reader paging by id can skip nothing)."""
    with _engine(url).connect() as connection:
        versions = connection.execute(
            sa.select(schema.versions.c.id, schema.versions.c.published_at).order_by(
                schema.versions.c.id
            )
        ).all()
        records = connection.execute(
            sa.select(schema.change_records.c.id, schema.change_records.c.version_id).order_by(
                schema.change_records.c.id
            )
        ).all()
        events = connection.execute(
            sa.select(schema.events.c.version_id, schema.events.c.payload).order_by(
                schema.events.c.id
            )
        ).all()
    published = [v.published_at for v in versions]
    assert published == sorted(published) and len(set(published)) == len(published)
    # the record ids, in order, name the versions in order (no interleaving)
    version_of_records = [r.version_id for r in records]
    assert version_of_records == sorted(version_of_records)
    assert [e.version_id for e in events] == [v.id for v in versions]
    previous_to = 0
    for event in events:
        start = decode_change_cursor(event.payload["cursor_from"])
        end = decode_change_cursor(event.payload["cursor_to"])
        assert start is not None and end is not None and previous_to <= start < end
        assert [r.id for r in records if start < r.id <= end] == [
            r.id for r in records if r.version_id == event.version_id
        ]
        previous_to = end


def test_two_publishers_with_new_content_publish_one_after_the_other_in_id_order(
    refreshed: RefreshedOnPostgres, tmp_path: Path
) -> None:
    assert refreshed.outcome.version is not None
    homes = [
        _publisher_home(refreshed, tmp_path / "host-a", volume_bump=1),
        _publisher_home(refreshed, tmp_path / "host-b", volume_bump=2),
    ]
    race = _race(refreshed, homes, tmp_path)
    # both waited while the test held the lock, then one published while the other still waited
    assert 1 in race.waiters_after_release
    assert race.versions_after == race.versions_while_held + 2
    assert all(r["version"] and r["records"] for r in race.results), race.results
    for log in race.logs:
        assert "waiting for the publish lock: another publisher (PostgreSQL backend" in log, log
    _assert_committed_in_id_order(refreshed.url)


def test_two_publishers_with_the_same_content_publish_it_once(
    refreshed: RefreshedOnPostgres, tmp_path: Path
) -> None:
    homes = [
        _publisher_home(refreshed, tmp_path / "host-c", volume_bump=3),
        _publisher_home(refreshed, tmp_path / "host-d", volume_bump=3),
    ]
    race = _race(refreshed, homes, tmp_path)
    assert 1 in race.waiters_after_release
    # the second, once through, finds its content current: no version, no record, no event
    assert race.versions_after == race.versions_while_held + 1
    assert sorted(bool(r["version"]) for r in race.results) == [False, True], race.results
    _assert_committed_in_id_order(refreshed.url)


def test_two_pipeline_hosts_publishing_to_the_bucket_publish_one_after_the_other(
    refreshed: RefreshedOnPostgres, tmp_path: Path
) -> None:
    """Two pipeline hosts, each with a published folder of its own, one bucket: the first one
    through fetches the current version from the bucket for its diff and uploads its own; the
    second, once through, fetches that one and publishes its own on top. The bucket holds every
    version, each with its parts, and records and events are in id order."""
    with s3_server(BUCKET) as endpoint:
        bucket_url = f"s3://{BUCKET}/race/published"
        # the current version, published before the bucket was set, uploaded as publish does
        bucket = PublishedBucket(bucket_url, endpoint)
        current = current_version_at(refreshed.url)
        assert current is not None
        version_file = refreshed.home / "published" / current.file_name
        for part in read_part_files(version_file):
            bucket.upload(refreshed.home / "published" / part, part)
        bucket.upload(version_file, current.file_name)
        homes = [
            _publisher_home(refreshed, tmp_path / "host-e", volume_bump=5, shared_folder=False),
            _publisher_home(refreshed, tmp_path / "host-f", volume_bump=6, shared_folder=False),
        ]
        settings = {
            **AWS_ENV,
            "FINDATA_PUBLISHED_URL": bucket_url,
            "FINDATA_S3_ENDPOINT_URL": endpoint,
        }
        race = _race(refreshed, homes, tmp_path, settings)
        assert 1 in race.waiters_after_release
        assert race.versions_after == race.versions_while_held + 2
        files = [f"{r['version']}.duckdb" for r in race.results]
        assert set(files) <= bucket.version_names()
        for name in files:  # each version's parts are in the bucket beside it
            parts = version_parts_in_bucket(bucket, name, tmp_path)
            assert parts and set(parts) <= bucket.names("parts/"), name
        # the host that published second fetched the first one's version for its diff
        with _engine(refreshed.url).connect() as connection:
            second = current_version(connection)
        assert second is not None
        second_home = homes[files.index(second.file_name)]
        assert {p.name for p in (second_home / "published").glob("*.duckdb")} >= set(files)
    _assert_committed_in_id_order(refreshed.url)
