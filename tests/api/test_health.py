"""``/healthz`` and ``/readyz`` (issue 22): outside ``/v1/``, no key, no quota cost. ``/readyz``
names the part that fails: the control plane (a PostgreSQL server stopped: its port closed),
the published store (no version, or the version's files gone), the shared cache (a Redis port
nobody listens on); ``/healthz`` answers 200 throughout. A dependency that hangs (a PostgreSQL
server frozen, a Redis address that accepts and never answers) does not hold ``/readyz``: it
answers within its checks' time limit (issue 42)."""

from __future__ import annotations

import shutil
import signal
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psutil

from findata.api.app import create_app
from findata.api.health import CHECK_SECONDS
from findata.settings import Settings
from tests.api.server import RunningApi, copy_published_home, free_port, serve, start_clock
from tests.databases import PrivatePostgres, private_postgres, upgraded

REDIS_URL = "redis://127.0.0.1:6379/9"  # this suite's Redis database (never flushed here)
#: what a probe may take at most against a hung dependency: the checks' time limit and room
#: for a loaded 2-core machine (the dependency itself would hold a request indefinitely)
ANSWER_BOUND = 3.0


@contextmanager
def served(settings: Settings) -> Iterator[RunningApi]:
    clock = start_clock()
    with serve(create_app(settings, clock), clock) as running:
        yield running


def probe(api: RunningApi) -> tuple[httpx.Response, httpx.Response]:
    with api.client() as client:
        return client.get("/healthz"), client.get("/readyz")


def wait_ready(api: RunningApi, seconds: float = 60) -> None:
    """Wait until ``/readyz`` answers 200: a server just started opens the current version on
    its first probe, which on a loaded machine takes longer than a probe waits (0.8 s); a
    readiness probe is repeated until it passes, as a load balancer repeats it."""
    deadline = time.monotonic() + seconds
    while (answer := probe(api)[1]).status_code != 200:
        assert time.monotonic() < deadline, answer.text
        time.sleep(0.1)


def wait_failing_only(api: RunningApi, part: str, seconds: float = 60) -> None:
    """Wait until ``/readyz`` names ``part`` alone: the published version opens on the first
    probe, which on a loaded machine takes longer than a probe waits (as in ``wait_ready``)."""
    deadline = time.monotonic() + seconds
    while (answer := probe(api)[1]).json().get("failing") != [part]:
        assert time.monotonic() < deadline, answer.text
        time.sleep(0.1)


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
            wait_ready(api)
            postgres.pg_ctl("stop", "-m", "fast")  # its port closes
            healthz, readyz = probe(api)
            assert healthz.status_code == 200
            assert readyz.status_code == 503
            assert readyz.json()["status"] == "unavailable"
            # the version is read from the control plane too: it cannot be found either
            assert "control_plane" in readyz.json()["failing"]
            postgres.pg_ctl("start", "-w")
            wait_ready(api)


def test_not_ready_without_a_published_version(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "empty-home")
    upgraded(settings.control_plane_url)
    with served(settings) as api:
        healthz, readyz = probe(api)
    assert healthz.status_code == 200
    assert readyz.status_code == 503
    assert readyz.json() == {"status": "unavailable", "failing": ["published"]}


def test_not_ready_when_the_published_files_are_gone(published_home: Path, tmp_path: Path) -> None:
    settings = copy_published_home(published_home, tmp_path / "home", None)
    with served(settings) as api:
        wait_ready(api)
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


@contextmanager
def frozen(postgres: PrivatePostgres) -> Iterator[None]:
    """Every process of the server stopped (SIGSTOP): connections are accepted by the kernel
    and nothing answers, as a server that hangs; continued afterwards."""
    postmaster = int((postgres.directory / "data" / "postmaster.pid").read_text().split()[0])
    processes = [psutil.Process(postmaster), *psutil.Process(postmaster).children(recursive=True)]
    for process in processes:
        process.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        for process in processes:
            process.send_signal(signal.SIGCONT)


def timed_readyz(api: RunningApi) -> tuple[httpx.Response, float]:
    with api.client() as client:
        started = time.monotonic()
        answer = client.get("/readyz", timeout=30)
        return answer, time.monotonic() - started


def test_readyz_answers_in_time_while_the_control_plane_hangs(
    published_home: Path, tmp_path: Path
) -> None:
    with private_postgres() as postgres:
        settings = copy_published_home(published_home, tmp_path / "home", postgres.url)
        with served(settings) as api:
            wait_ready(api)
            with frozen(postgres):
                for _ in range(3):  # each probe, not only the first: hung checks do not pile up
                    readyz, seconds = timed_readyz(api)
                    assert readyz.status_code == 503
                    # the current version is read from the control plane: it hangs as well
                    assert readyz.json() == {
                        "status": "unavailable",
                        "failing": ["control_plane", "published"],
                    }
                    assert CHECK_SECONDS <= seconds < ANSWER_BOUND
                assert probe(api)[0].status_code == 200
            wait_ready(api)  # ready again once the server answers


@contextmanager
def silent_listener() -> Iterator[int]:
    """A loopback port whose connections are accepted and never answered."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)  # the kernel accepts up to the backlog; nothing reads
        yield listener.getsockname()[1]


def test_readyz_answers_in_time_while_the_shared_cache_hangs(
    published_home: Path, tmp_path: Path
) -> None:
    home = copy_published_home(published_home, tmp_path / "home", None).home
    with silent_listener() as port:
        hanging = f"redis://127.0.0.1:{port}/9"
        with served(Settings(home=home, cache_url=hanging)) as api:
            wait_failing_only(api, "cache")
            for _ in range(2):
                readyz, seconds = timed_readyz(api)
                assert readyz.status_code == 503
                assert readyz.json() == {"status": "unavailable", "failing": ["cache"]}
                assert seconds < ANSWER_BOUND
