"""Published versions in an S3 bucket (``FINDATA_PUBLISHED_URL``), on a real S3 server on loopback
(moto in server mode) and one PostgreSQL control plane shared by two hosts with homes of their
own: host A publishes from its build warehouse (uploading the version before committing it);
host B runs ``findata serve`` on an empty published folder and serves what A published, picks
up A's next version without a restart (serving the version before while it fetches), never sees
a publish that died mid-upload, and retention removes from the bucket what no version reads.

The module shares one build (the session's ``published_home`` warehouse, copied into A) and one
server B; its tests run in order, each publish changing A's marts a little more."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest
import sqlalchemy as sa

from findata.accounts.store import AccountStore
from findata.clock import SystemClock
from findata.control_plane import schema
from findata.control_plane.database import engine_for
from findata.published.bucket import PublishedBucket, bucket_for
from findata.published.publish import publish
from findata.published.retention import remove_superseded_versions
from findata.published.versions import current_version, read_part_files
from findata.settings import Settings
from tests.api.server import findata_serve
from tests.databases import fresh_postgres_database, upgraded
from tests.faults import DIED, python_dying_at
from tests.s3_server import AWS_ENV, s3_server

BUCKET = "findata-versions"


@dataclass
class Hosts:
    """Pipeline host A (its settings), API host B (its URL and home), one control plane and
    bucket."""

    a: Settings
    b_url: str
    b_home: Path
    key: str
    bucket: PublishedBucket
    ticker: str
    entity_id: int
    params: dict[str, Any]


@pytest.fixture(scope="module")
def s3_url() -> Iterator[str]:
    """A real S3 server on loopback with an empty bucket; the AWS variables set meanwhile."""
    with s3_server(BUCKET) as url:
        yield url


@pytest.fixture(scope="module")
def hosts(
    s3_url: str, published_home: Path, scenarios: dict, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Hosts]:
    """A's first version published to the bucket, and B serving on an empty home."""
    home_a = tmp_path_factory.mktemp("pipeline-host")
    home_b = tmp_path_factory.mktemp("api-host")
    (home_a / "build").mkdir()
    shutil.copy(published_home / "build" / "warehouse.duckdb", home_a / "build")
    with fresh_postgres_database() as database_url:
        upgraded(database_url)
        bucket_url = f"s3://{BUCKET}/prod/published"
        a = Settings(
            home=home_a, database_url=database_url, published_url=bucket_url, s3_endpoint_url=s3_url
        )
        first = publish(a, run_id=uuid.uuid4().hex, clock=SystemClock())
        assert first.changed
        store = AccountStore(engine_for(database_url), SystemClock())
        key = store.create_key(store.create_account("bucket@example.com", "pro").id).key
        env = {
            **os.environ,
            **AWS_ENV,
            "FINDATA_HOME": str(home_b),
            "FINDATA_DATABASE_URL": database_url,
            "FINDATA_PUBLISHED_URL": bucket_url,
            "FINDATA_S3_ENDPOINT_URL": s3_url,
        }
        env.pop("FINDATA_CACHE_URL", None)
        as_of = dt.date.fromisoformat(scenarios["as_of"])
        params = {"start": (as_of - dt.timedelta(days=40)).isoformat(), "limit": 5000}
        # one worker: the request that notices a new version is the one served from the version
        # before while the fetch runs (a worker that served nothing yet waits for the fetch)
        with findata_serve(env, 1) as (b_url, _):
            yield Hosts(
                a,
                b_url,
                home_b,
                key,
                bucket_for(a),  # type: ignore[arg-type]
                scenarios["plain"]["ticker"],
                scenarios["plain"]["entity_id"],
                params,
            )


def _get(hosts: Hosts, path: str, **params: Any) -> httpx.Response:
    return httpx.get(
        f"{hosts.b_url}{path}", params=params, headers={"X-API-Key": hosts.key}, timeout=60
    )


def _prices(hosts: Hosts) -> list[dict[str, Any]]:
    answer = _get(hosts, f"/v1/prices/{hosts.ticker}", **hosts.params)
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]


def _status_version(hosts: Hosts) -> str:
    answer = _get(hosts, "/v1/status")
    assert answer.status_code == 200, answer.text
    return str(answer.json()["version"])


def _current(settings: Settings) -> sa.Row:
    with engine_for(settings.control_plane_url).connect() as connection:
        row = current_version(connection)
    assert row is not None
    return row


def _version_objects(settings: Settings, row: sa.Row) -> set[str]:
    """The objects a version reads: its file and its parts (from the pipeline's copy)."""
    return {row.file_name, *read_part_files(settings.published_dir / row.file_name)}


def _drop_last_day(settings: Settings, entity_id: int) -> None:
    """Change A's marts: the security's latest day of prices is gone."""
    with duckdb.connect(str(settings.warehouse_path)) as warehouse:
        warehouse.execute(
            "DELETE FROM marts.prices WHERE entity_id = $e AND date = "
            "(SELECT max(date) FROM marts.prices WHERE entity_id = $e)",
            {"e": entity_id},
        )


def test_a_host_with_an_empty_folder_serves_the_version_published_on_another(
    hosts: Hosts,
) -> None:
    # B started on an empty home: the status request that saw it serving fetched the version
    current = _current(hosts.a)
    assert hosts.bucket.names() == _version_objects(hosts.a, current)
    rows = _prices(hosts)
    # the same rows as the version's file on A
    with duckdb.connect(str(hosts.a.published_dir / current.file_name), read_only=True) as con:
        con.execute("SET file_search_path = ?", [str(hosts.a.published_dir)])
        ((count, last),) = con.execute(
            "SELECT count(*), max(date) FROM prices WHERE entity_id = ? AND date >= ?",
            [hosts.entity_id, hosts.params["start"]],
        ).fetchall()
    assert rows and (len(rows), max(r["date"] for r in rows)) == (count, last.isoformat())
    assert (hosts.b_home / "published" / current.file_name).exists()  # fetched once, kept


def test_a_new_version_is_served_without_a_restart(hosts: Hosts) -> None:
    before = _prices(hosts)
    old = _current(hosts.a).label
    _drop_last_day(hosts.a, hosts.entity_id)
    result = publish(hosts.a, run_id=uuid.uuid4().hex, clock=SystemClock())
    assert result.changed and result.version != old
    # the request that notices the version is answered from the one before (the fetch runs
    # in the background): status names the version it serves; then the new one is served, and
    # status names it from then on
    assert _status_version(hosts) == old
    deadline = time.monotonic() + 60
    while (after := _prices(hosts)) == before:
        assert time.monotonic() < deadline, "the new version was never served"
        time.sleep(0.1)
    assert _status_version(hosts) == result.version
    assert after == before[:-1] or after == before[1:]  # the last day gone, whatever the order
    assert max(r["date"] for r in after) < max(r["date"] for r in before)


def test_a_publish_that_dies_mid_upload_commits_nothing(hosts: Hosts) -> None:
    current = _current(hosts.a)
    served = _prices(hosts)
    objects = hosts.bucket.names()
    counts = _counts(hosts.a)
    _drop_last_day(hosts.a, hosts.entity_id)
    env = {
        **os.environ,
        "FINDATA_HOME": str(hosts.a.home_dir),
        "FINDATA_DATABASE_URL": hosts.a.control_plane_url,
        "FINDATA_PUBLISHED_URL": str(hosts.a.published_url),
        "FINDATA_S3_ENDPOINT_URL": str(hosts.a.s3_endpoint_url),
    }
    # dies right after the first object of the version is in the bucket
    died = subprocess.run(
        python_dying_at(
            "findata.published.bucket:PublishedBucket.upload", _PUBLISH_IN_A_PROCESS, after=True
        ),
        env=env,
        capture_output=True,
        text=True,
    )
    assert died.returncode == DIED, died.stderr[-3000:]
    left = hosts.bucket.names() - objects
    assert left and all(name.startswith("parts/") for name in left)  # no version file
    assert _current(hosts.a).label == current.label
    assert _counts(hosts.a) == counts
    assert _prices(hosts) == served
    # retention removes what the dead publish uploaded (no version object reads it)
    retention = remove_superseded_versions(hosts.a, dt.datetime.now(dt.UTC))
    assert set(retention.objects_removed) == left
    assert hosts.bucket.names() == objects


_PUBLISH_IN_A_PROCESS = """
import uuid
from findata.clock import SystemClock
from findata.published.publish import publish
from findata.settings import get_settings
publish(get_settings(), run_id=uuid.uuid4().hex, clock=SystemClock())
"""


def _counts(settings: Settings) -> tuple[int, int, int]:
    """Versions, change records and events on the control plane."""
    with engine_for(settings.control_plane_url).connect() as connection:
        return tuple(  # type: ignore[return-value]
            connection.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
            for table in (schema.versions, schema.change_records, schema.events)
        )


def test_retention_removes_the_objects_no_remaining_version_reads(hosts: Hosts) -> None:
    # the dead publish's change, published for real: three versions, the first two replaced
    result = publish(hosts.a, run_id=uuid.uuid4().hex, clock=SystemClock())
    assert result.changed
    current = _current(hosts.a)
    everything = hosts.bucket.names()
    assert everything > _version_objects(hosts.a, current)
    # a day later the versions replaced before are past the retention (24 hours)
    retention = remove_superseded_versions(hosts.a, dt.datetime.now(dt.UTC) + dt.timedelta(days=1))
    assert hosts.bucket.names() == _version_objects(hosts.a, current)
    assert set(retention.objects_removed) == everything - hosts.bucket.names()
    # host B fetches the new version, then drops from its copy what the bucket no longer holds
    deadline = time.monotonic() + 60
    while sorted(p.name for p in (hosts.b_home / "published").glob("*.duckdb")) != [
        current.file_name
    ]:
        assert time.monotonic() < deadline, "host B kept versions retention removed"
        _prices(hosts)
        time.sleep(0.1)
    assert {
        f"parts/{p.name}" for p in (hosts.b_home / "published" / "parts").glob("*.parquet")
    } == _version_objects(hosts.a, current) - {current.file_name}
