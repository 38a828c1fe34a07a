"""``GET /metrics`` (issue 22) of ``findata serve --workers 2``: after a scripted mix of requests
sent over several connections at once, the exposition parsed with ``prometheus_client.parser``
counts exactly the requests sent, by status, added up over both workers; quota refusals, cache
lookups, data freshness and the webhook queue are there; no label holds a key, an address, a
ticker or a query string; a client not on loopback gets 404 unless it sends the token.

Issue 42: the same server shows ``process_*`` of each of its processes (a ``pid`` label each),
``python_info`` and ``findata_build_info``, and the refresh runs on record (the last success, its
duration, the failures) once refreshes ran in another process; no label is a request id."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import re
import shutil
import signal
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psutil
import pytest
import sqlalchemy as sa
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from findata.accounts.store import AccountStore
from findata.clock import SystemClock
from findata.control_plane.database import engine_for
from findata.orchestration.refresh import run_refresh
from findata.published.versions import current_version_at
from findata.settings import get_settings
from findata.webhooks.tables import webhook_attempts, webhook_deliveries
from tests.api.server import copy_published_home, free_port
from tests.findata.stopping import command_env, command_group, wait_answering

TOKEN = "scrape-token-for-tests"
UNKNOWN_TICKER = "ZZZQX"
IP_ADDRESS = re.compile(r"\d{1,3}(\.\d{1,3}){3}|::1|[0-9a-f]*:[0-9a-f]*:[0-9a-f:]*", re.I)
#: what a request id looks like: a UUID, or a long run of hexadecimal digits
REQUEST_ID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}|[0-9a-f]{16,}", re.I)
PROCESS_METRICS = (
    "process_resident_memory_bytes",
    "process_virtual_memory_bytes",
    "process_cpu_seconds_total",
    "process_start_time_seconds",
    "process_open_fds",
    "process_max_fds",
)


def scrape(url: str, **headers: str) -> list[Sample]:
    answer = httpx.get(f"{url}/metrics", headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return [s for family in text_string_to_metric_families(answer.text) for s in family.samples]


def values(samples: list[Sample], name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {tuple(sorted(s.labels.items())): s.value for s in samples if s.name == name}


def requests_by_status(samples: list[Sample]) -> Counter[int]:
    """``findata_http_requests_total`` added up by status, the probes and scrapes left out."""
    counted: Counter[int] = Counter()
    for sample in samples:
        if sample.name == "findata_http_requests_total" and sample.labels["route"] not in (
            "/healthz",
            "/metrics",
        ):
            counted[int(sample.labels["status"])] += int(sample.value)
    return counted


def counting_pids(scratch: Path) -> set[str]:
    """The processes that have counted into the run's multiprocess folder (one per worker)."""
    folders = list(scratch.glob("findata-metrics-*"))
    assert len(folders) == 1, folders
    return {path.stem.split("_")[-1] for path in folders[0].glob("counter_*.db")}


def other_address() -> str | None:
    """An IPv4 address of this machine that is not loopback (None when it has none)."""
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family.name == "AF_INET" and not address.address.startswith("127."):
                return address.address
    return None


def test_metrics_of_two_workers_count_the_requests_sent(
    published_home: Path, tmp_path: Path, scenarios: dict[str, object]
) -> None:
    home = tmp_path / "home"
    copy_published_home(published_home, home, None)
    engine = engine_for(f"sqlite:///{home.resolve() / 'control.sqlite'}")
    # the copy holds whatever the session's other tests left in the shared demo's control
    # plane: an empty delivery queue here, so that its gauges have known values
    with engine.begin() as connection:
        connection.execute(sa.delete(webhook_attempts))
        connection.execute(sa.delete(webhook_deliveries))
    store = AccountStore(engine, SystemClock())
    pro = store.create_key(store.create_account("pro@example.com", "pro").id).key
    free = store.create_key(store.create_account("free@example.com", "free").id).key
    ticker = scenarios["plain"]["ticker"]  # type: ignore[index]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    scratch = tmp_path / "tmp"  # where the run's multiprocess folder is made
    scratch.mkdir()
    env = {**command_env(home, 10, metrics_token=TOKEN), "TMPDIR": str(scratch)}
    args = ["serve", "--host", "0.0.0.0", "--port", str(port), "--workers", "2"]

    def get(path: str, key: str | None = None, method: str = "GET", **params: str) -> int:
        headers = {"X-API-Key": key} if key else {}
        return httpx.request(
            method, f"{url}{path}", params=params, headers=headers, timeout=30
        ).status_code

    mix = [
        *[lambda: get("/v1/search", free, limit="1") for _ in range(41)],  # Free: 40 an hour
        *[lambda: get("/v1/search", None, q="a", api_key=pro) for _ in range(4)],
        *[lambda: get(f"/v1/prices/{ticker}") for _ in range(3)],  # no key: 401
        *[lambda: get(f"/v1/prices/{UNKNOWN_TICKER}", pro) for _ in range(2)],
        *[lambda: get("/v1/no-such-endpoint", pro) for _ in range(2)],
        *[lambda: get("/v1/search", pro, method="DELETE") for _ in range(2)],
        lambda: get("/v1/search", method="OPTIONS"),
        *[lambda: get("/v1/status") for _ in range(2)],
    ]
    with (tmp_path / "serve.log").open("wb") as output, command_group(args, env, output) as process:
        wait_answering(f"{url}/healthz", process)
        # probes on new connections until each worker has answered one (the kernel gives a
        # connection to whichever worker accepts first): the counts below are then both
        # workers' added up (probes are not counted there)
        deadline = time.monotonic() + 60
        while len(counting_pids(scratch)) < 2:
            assert time.monotonic() < deadline, counting_pids(scratch)
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda _: httpx.get(f"{url}/healthz", timeout=30), range(16)))
        with ThreadPoolExecutor(8) as pool:
            sent = Counter(pool.map(lambda request: request(), mix))
        sent.update(get(f"/v1/prices/{ticker}", pro) for _ in range(6))  # the same answer again
        assert sent[429] == 1 and sent[401] == 3 and sent[405] == 2, sent

        samples = scrape(url)
        assert requests_by_status(samples) == sent
        assert len(counting_pids(scratch)) == 2  # the counts are both workers' files, added up

        routes = {s.labels["route"] for s in samples if s.name == "findata_http_requests_total"}
        assert {"/v1/search", "/v1/prices/{tickers}", "/v1/status", "unmatched"} <= routes
        assert values(samples, "findata_quota_refusals_total") == {
            (("reason", "burst_limit_reached"),): 1.0
        }
        lookups = values(samples, "findata_response_cache_lookups_total")
        assert lookups[(("result", "hit"),)] >= 1
        assert sum(lookups.values()) >= 6 + 4 + 40
        latency = values(samples, "findata_http_request_duration_seconds_count")
        assert sum(latency.values()) == sum(requests_by_status(samples).values()) + sum(
            v for labels, v in latency.items() if dict(labels)["route"] in ("/healthz", "/metrics")
        )

        (age,) = values(samples, "findata_published_version_age_seconds").values()
        version = current_version_at(f"sqlite:///{home.resolve() / 'control.sqlite'}")
        assert version is not None
        published_at = version.published_at.replace(tzinfo=dt.UTC)
        expected = (dt.datetime.now(dt.UTC) - published_at).total_seconds()
        assert abs(age - expected) < 60
        assert values(samples, "findata_webhook_queue_depth") == {(): 0.0}
        assert values(samples, "findata_webhook_queue_oldest_due_age_seconds") == {(): 0.0}
        assert set(values(samples, "findata_webhook_deliveries")) == {
            (("status", s),) for s in ("pending", "delivering", "delivered", "failed")
        } | {(("status", "no_retries_left"),)}

        for sample in samples:
            for name, value in sample.labels.items():
                assert "fdk_" not in value, sample
                assert not IP_ADDRESS.fullmatch(value) and not IP_ADDRESS.search(value), sample
                assert "?" not in value and "=" not in value and "&" not in value, sample
                assert ticker not in value and UNKNOWN_TICKER not in value, (name, sample)

        # only loopback clients, or others with the token
        forwarded = {"X-Forwarded-For": "203.0.113.7"}  # uvicorn trusts its loopback proxy
        assert httpx.get(f"{url}/metrics", headers=forwarded).status_code == 404
        wrong = {**forwarded, "Authorization": "Bearer not-the-token"}
        assert httpx.get(f"{url}/metrics", headers=wrong).status_code == 404
        scrape(url, **forwarded, Authorization=f"Bearer {TOKEN}")
        address = other_address()
        if address is not None:  # a real client from another address of this machine
            elsewhere = f"http://{address}:{port}/metrics"
            assert httpx.get(elsewhere, timeout=10).status_code == 404
            with_token = {"Authorization": f"Bearer {TOKEN}"}
            assert httpx.get(elsewhere, headers=with_token, timeout=10).status_code == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    assert not list(scratch.glob("findata-metrics-*"))  # the run's folder is removed


def test_metrics_off_answers_404(published_home: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    copy_published_home(published_home, home, None)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = command_env(home, 10, metrics_enabled="false")
    args = ["serve", "--port", str(port), "--workers", "1"]
    with (tmp_path / "serve.log").open("wb") as output, command_group(args, env, output) as process:
        wait_answering(f"{url}/healthz", process)
        assert httpx.get(f"{url}/metrics").status_code == 404
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0


def live_workers(samples: list[Sample]) -> set[int]:
    return {int(s.labels["pid"]) for s in samples if s.name == "findata_api_worker"}


def test_two_workers_show_their_processes_the_build_and_the_refresh_runs(
    published_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    # landing and the build as published (a refresh finds nothing changed); no run on record
    shutil.copytree(published_home, home, ignore=shutil.ignore_patterns("dagster"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    args = ["serve", "--port", str(port), "--workers", "2"]
    request_id = str(uuid.uuid4())
    with (
        (tmp_path / "serve.log").open("wb") as output,
        command_group(args, command_env(home, 10), output) as process,
    ):
        wait_answering(f"{url}/healthz", process)
        # requests carrying a request id of their own, on new connections (both workers)
        sent_ids = {request_id}
        for _ in range(12):
            answer = httpx.get(f"{url}/v1/status", headers={"X-Request-ID": request_id})
            assert answer.status_code == 200
            sent_ids |= {v for k, v in answer.headers.items() if "request" in k.lower()}
        deadline = time.monotonic() + 60
        while len(workers := live_workers(samples := scrape(url))) < 2:
            assert time.monotonic() < deadline, workers
            time.sleep(0.2)

        # process_*: the supervisor and each live worker, one series each, real values
        supervisor = psutil.Process(process.pid)
        assert workers <= {child.pid for child in supervisor.children()} and len(workers) == 2
        for name in PROCESS_METRICS:
            pids = {int(dict(labels)["pid"]) for labels in values(samples, name)}
            assert pids == workers | {process.pid}, name
        for labels, started in values(samples, "process_start_time_seconds").items():
            assert abs(started - psutil.Process(int(dict(labels)["pid"])).create_time()) < 2
        for labels, resident in values(samples, "process_resident_memory_bytes").items():
            assert resident > 10 * 2**20, labels  # a Python process with the API loaded
        assert len(values(samples, "python_info")) == 1
        version = importlib.metadata.version("findata")
        assert values(samples, "findata_build_info") == {(("version", version),): 1.0}

        # refreshes run by another process: the API reads them from the Dagster instance
        assert values(samples, "findata_refresh_failures_total") == {(): 0.0}
        assert not values(samples, "findata_refresh_last_success_timestamp_seconds")
        monkeypatch.setenv("FINDATA_HOME", str(home))
        monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))
        before = time.time()
        # as the schedule's run: it starts, finds nothing changed, stops at its first step
        succeeded = run_refresh(get_settings(), run_when_unchanged=True)
        after = time.time()
        assert succeeded.success and succeeded.run_id and succeeded.unchanged_since, succeeded
        samples = scrape(url)
        (ended,) = values(samples, "findata_refresh_last_success_timestamp_seconds").values()
        (took,) = values(samples, "findata_refresh_last_success_duration_seconds").values()
        assert before < ended < after and 0 < took < after - before
        assert values(samples, "findata_refresh_failures_total") == {(): 0.0}

        # a refresh that fails: a malformed prices file stops its raw step
        broken = home / "landing" / "prices" / "prices_broken.csv"
        broken.write_text("not,the,prices,header\n1,2,3,4\n")
        before = time.time()
        failed = run_refresh(get_settings())
        after = time.time()
        assert not failed.success and failed.run_id, failed
        for _ in range(2):  # whichever worker answers
            samples = scrape(url)
            assert values(samples, "findata_refresh_failures_total") == {(): 1.0}
            (failed_at,) = values(
                samples, "findata_refresh_last_failure_timestamp_seconds"
            ).values()
            assert before < failed_at < after
            assert values(samples, "findata_refresh_last_success_timestamp_seconds") == {(): ended}

        # no label is a request id, by name or by value
        text = httpx.get(f"{url}/metrics", timeout=30).text
        assert not [sent for sent in sent_ids if sent in text]
        for sample in samples:
            for name, value in sample.labels.items():
                assert "request" not in name and not REQUEST_ID.search(value), sample
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
