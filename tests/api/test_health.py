"""``/healthz`` and ``/readyz`` (issue 22): outside ``/v1/``, no key, no quota cost. ``/readyz``
names the part that fails: the control plane (a PostgreSQL server stopped: its port closed),
the published store (no version, or the version's files gone), the shared cache (a Redis port
nobody listens on); ``/healthz`` answers 200 throughout."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from findata.api.app import create_app
from findata.settings import Settings
from tests.api.server import RunningApi, copy_published_home, free_port, serve, start_clock
from tests.databases import private_postgres

REDIS_URL = "redis://127.0.0.1:6379/9"  # this suite's Redis database (never flushed here)


@contextmanager
def served(settings: Settings) -> Iterator[RunningApi]:
    clock = start_clock()
    with serve(create_app(settings, clock), clock) as running:
        yield running


def probe(api: RunningApi) -> tuple[httpx.Response, httpx.Response]:
    with api.client() as client:
        return client.get("/healthz"), client.get("/readyz")


def test_ready_on_the_published_demo_and_probes_cost_no_quota(api: RunningApi) -> None:
    key = api.new_key("free")  # Free: 40 requests an hour
    now = api.clock.now()
    keyless_before = api.counters.usage("ip:127.0.0.1", now, "day")
    with api.client() as client:
        for _ in range(50):  # past Free's hourly allowance: none of them counts
            assert client.get("/healthz", headers={"X-API-Key": key.key}).status_code == 200
        answers = [client.get("/readyz", headers={"X-API-Key": key.key}) for _ in range(3)]
        healthz = client.get("/healthz")
    assert healthz.json() == {"status": "ok"}
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert answers[0].json() == {"status": "ready", "checked": ["control_plane", "published"]}
    assert api.counters.usage(key.account.id, now, "day") == (0, 0)
    assert api.counters.usage("ip:127.0.0.1", now, "day") == keyless_before
    assert "X-RateLimit-Remaining-Day" not in healthz.headers


def test_not_ready_while_the_control_plane_is_unreachable(
    published_home: Path, tmp_path: Path
) -> None:
    with private_postgres() as postgres:
        settings = copy_published_home(published_home, tmp_path / "home", postgres.url)
        with served(settings) as api:
            healthz, readyz = probe(api)
            assert (healthz.status_code, readyz.status_code) == (200, 200)
            postgres.pg_ctl("stop", "-m", "fast")  # its port closes
            healthz, readyz = probe(api)
            assert healthz.status_code == 200
            assert readyz.status_code == 503
            assert readyz.json()["status"] == "unavailable"
            # the version is read from the control plane too: it cannot be found either
            assert "control_plane" in readyz.json()["failing"]
            postgres.pg_ctl("start", "-w")
            assert probe(api)[1].status_code == 200


def test_not_ready_without_a_published_version(tmp_path: Path) -> None:
    with served(Settings(home=tmp_path / "empty-home")) as api:
        healthz, readyz = probe(api)
    assert healthz.status_code == 200
    assert readyz.status_code == 503
    assert readyz.json() == {"status": "unavailable", "failing": ["published"]}


def test_not_ready_when_the_published_files_are_gone(published_home: Path, tmp_path: Path) -> None:
    settings = copy_published_home(published_home, tmp_path / "home", None)
    with served(settings) as api:
        assert probe(api)[1].status_code == 200
        # the parts only: the version's file stays open in the worker, its views read the parts
        shutil.rmtree(settings.published_dir / "parts")
        healthz, readyz = probe(api)
        assert healthz.status_code == 200
        assert readyz.status_code == 503
        assert readyz.json()["failing"] == ["published"]
        for version in settings.published_dir.glob("*.duckdb"):
            version.unlink()
        assert probe(api)[1].json()["failing"] == ["published"]


def test_the_shared_cache_is_checked_when_one_is_set(published_home: Path, tmp_path: Path) -> None:
    home = copy_published_home(published_home, tmp_path / "home", None).home
    with served(Settings(home=home, cache_url=REDIS_URL)) as api:
        readyz = probe(api)[1]
        assert readyz.status_code == 200
        assert readyz.json()["checked"] == ["cache", "control_plane", "published"]
    closed = f"redis://127.0.0.1:{free_port()}/9"
    with served(Settings(home=home, cache_url=closed)) as api:
        healthz, readyz = probe(api)
    assert healthz.status_code == 200
    assert readyz.status_code == 503
    assert readyz.json()["failing"] == ["cache"]
