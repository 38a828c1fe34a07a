"""Scale-out as processes on loopback (issue 20): two API hosts (``findata serve``, homes of their
own) behind a real nginx, two ``findata webhooks worker`` processes and a pipeline host
(``findata refresh``), all on one PostgreSQL database, one Redis and one S3 server (moto).

The module shares one such cluster, set up once: the pipeline host publishes a first version, the
hosts and workers start, Max accounts add webhook endpoints (and queue a test event on each), a
day of prices lands and a second refresh publishes it. The tests then look at what the hosts
serve, count, cache and send; the last one stops a host under load (it runs last)."""

from __future__ import annotations

import datetime as dt
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
import standardwebhooks
from conftest import PublishedDemo
from cryptography.fernet import Fernet

from findata.accounts import usage
from findata.accounts.store import AccountStore
from findata.accounts.usage import Count, window_start
from findata.clock import SystemClock
from findata.control_plane import schema
from findata.control_plane.database import engine_for
from findata.settings import Settings
from findata.webhooks.endpoints import WebhookEndpoints
from findata.webhooks.signing import SecretBox
from findata.webhooks.tables import webhook_attempts, webhook_deliveries
from findata.webhooks.url_safety import UrlPolicy, system_resolver
from tests.api.server import free_port, wait_until_serving
from tests.databases import fresh_postgres_database
from tests.s3_server import AWS_ENV, s3_server
from tests.scale_out.reverse_proxy import ReverseProxy, reverse_proxy
from tests.sources.landing_edits import add_price_day, next_session
from tests.webhooks.receiver import LoopbackCertificates, Receiver

FINDATA = Path(sys.executable).parent / "findata"
#: one Redis database for the cache and counters of every host (the counters' keys carry the
#: control plane's namespace, the cached answers the version label and a parameter of this run)
REDIS_URL = "redis://127.0.0.1:6379/10"
BUCKET = "findata-scale-out"
#: Max accounts with webhook endpoints, and endpoints each (the plan allows 5)
ACCOUNTS, ENDPOINTS_EACH = 4, 5
FREE_DAY = 100  # contracts/plans.yaml: Free's requests per day (and 40 per hour)


@dataclass
class ApiHost:
    """A ``findata serve`` process with a home of its own."""

    name: str
    home: Path
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass
class Cluster:
    """The running cluster and what its setup did."""

    database_url: str
    hosts: list[ApiHost]
    proxy: ReverseProxy
    pipeline_home: Path
    workers: list[subprocess.Popen[bytes]]
    receiver: Receiver
    #: endpoint path -> its secret; the test events queued on them
    endpoints: dict[str, str]
    test_events: set[str]
    first_version: str
    second_version: str
    new_day: dt.date
    gainer: int
    ticker: str

    @property
    def store(self) -> AccountStore:
        return AccountStore(engine_for(self.database_url), SystemClock())


def _role_env(shared: dict[str, str], home: Path) -> dict[str, str]:
    """A role's environment: the shared settings and its own home; nothing else of this
    process's ``FINDATA_*`` leaks in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FINDATA_")}
    return {**env, **shared, "FINDATA_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}


def _refresh(env: dict[str, str], log: Path) -> str:
    """``findata refresh`` on the pipeline host; the version it published."""
    with log.open("a") as stderr:
        done = subprocess.run(
            [str(FINDATA), "refresh"], env=env, stdout=subprocess.PIPE, stderr=stderr, timeout=600
        )
    assert done.returncode == 0, log.read_text()[-4000:]
    version = done.stdout.decode().strip().splitlines()[0]
    assert version, log.read_text()[-4000:]
    return version


def _start(stack: ExitStack, command: list[str], env: dict[str, str], log: Path) -> Any:
    """A long-running process, stopped (SIGTERM, then SIGKILL) when ``stack`` closes."""
    output = stack.enter_context(log.open("wb"))
    process = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)

    def stop() -> None:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)

    stack.callback(stop)
    return process


@pytest.fixture(scope="module")
def cluster(
    two_week_old_demo: PublishedDemo,
    receiver: Receiver,
    test_certificates: LoopbackCertificates,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("scale-out")
    logs = root / "logs"
    logs.mkdir()
    with ExitStack() as stack:
        database_url = stack.enter_context(fresh_postgres_database())
        s3_url = stack.enter_context(s3_server(BUCKET))
        ports = [free_port(), free_port()]
        proxy_port = free_port()
        shared = {
            **AWS_ENV,
            "FINDATA_DATABASE_URL": database_url,
            "FINDATA_CACHE_URL": REDIS_URL,
            "FINDATA_PUBLISHED_URL": f"s3://{BUCKET}/{uuid.uuid4().hex[:8]}/published",
            "FINDATA_S3_ENDPOINT_URL": s3_url,
            "FINDATA_BASE_URL": f"http://127.0.0.1:{proxy_port}",
            # the same on every host: a cursor or a session from one host is good on another
            "FINDATA_CURSOR_SECRET": secrets.token_urlsafe(32),
            "FINDATA_DASHBOARD_SECRET": secrets.token_urlsafe(32),
            "FINDATA_WEBHOOKS_SECRETS_KEY": Fernet.generate_key().decode(),
            "FINDATA_MAIL_SECRETS_KEY": Fernet.generate_key().decode(),
            # UNSAFE development settings: receivers on loopback, the test CA trusted
            "FINDATA_WEBHOOKS_ALLOW_PRIVATE": "1",
            "FINDATA_WEBHOOKS_CA_BUNDLE": str(test_certificates.ca),
            "FINDATA_WEBHOOKS_POLL_SECONDS": "0.2",
        }
        # the pipeline host: its working copy of the demo ending two weeks ago (a trading day
        # can be added), its first version published to the bucket
        pipeline_home = two_week_old_demo.copy_to(root / "pipeline")
        pipeline_env = _role_env(shared, pipeline_home)
        # the migrations, once before any role (the compose file's `migrate`)
        migrated = subprocess.run(
            [str(FINDATA), "db", "upgrade"], env=pipeline_env, capture_output=True, timeout=120
        )
        assert migrated.returncode == 0, migrated.stderr.decode()[-4000:]
        first_version = _refresh(pipeline_env, logs / "refresh.log")

        hosts = []
        for name, port in zip("ab", ports, strict=True):
            home = root / f"api-{name}"
            home.mkdir()
            command = [str(FINDATA), "serve", "--port", str(port), "--workers", "1"]
            log = logs / f"api-{name}.log"
            process = _start(stack, command, _role_env(shared, home), log)
            hosts.append(ApiHost(name, home, port, process, log))
        for host in hosts:
            wait_until_serving(host.url, host.process)
        proxy = stack.enter_context(reverse_proxy([h.address for h in hosts], port=proxy_port))
        workers = [
            _start(
                stack,
                [str(FINDATA), "webhooks", "worker"],
                _role_env(shared, root / f"worker-{n}"),
                logs / f"worker-{n}.log",
            )
            for n in range(2)
        ]

        # Max accounts add endpoints (as the dashboard does, on the same secrets key) and
        # queue a test event on each
        settings = Settings(
            home=root / "dashboard",
            database_url=database_url,
            base_url=shared["FINDATA_BASE_URL"],
            webhooks_secrets_key=shared["FINDATA_WEBHOOKS_SECRETS_KEY"],
            webhooks_allow_private=True,
        )
        engine = engine_for(database_url)
        store = AccountStore(engine, SystemClock())
        service = WebhookEndpoints(
            engine,
            SystemClock(),
            store,
            SecretBox.from_settings(settings),
            UrlPolicy.from_settings(settings),
            system_resolver,
        )
        endpoints: dict[str, str] = {}
        test_events = set()
        for _ in range(ACCOUNTS):
            account = store.create_account(f"{uuid.uuid4().hex[:12]}@example.com", "max")
            for _ in range(ENDPOINTS_EACH):
                url = receiver.url()
                shown = service.add(account.id, url)
                endpoints[url.removeprefix(f"https://localhost:{receiver.port}")] = shown.secret
                test_events.add(service.send_test(shown.endpoint.endpoint_id).event_id)

        # a day of prices lands on the pipeline host; the refresh publishes it
        scenarios = two_week_old_demo.scenarios
        gainer = scenarios["plain"]["entity_id"]
        new_day = next_session(dt.date.fromisoformat(scenarios["as_of"]))
        add_price_day(pipeline_home / "landing", new_day, [gainer])
        second_version = _refresh(pipeline_env, logs / "refresh.log")

        yield Cluster(
            database_url,
            hosts,
            proxy,
            pipeline_home,
            workers,
            receiver,
            endpoints,
            test_events,
            first_version,
            second_version,
            new_day,
            gainer,
            scenarios["plain"]["ticker"],
        )


def _wait_until(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out: {what}"
        time.sleep(0.2)


def _last_price_day(url: str, key: str, cluster: Cluster) -> str:
    answer = httpx.get(
        f"{url}/v1/prices/{cluster.ticker}",
        params={"start": (cluster.new_day - dt.timedelta(days=10)).isoformat()},
        headers={"X-API-Key": key},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    return max(row["date"] for row in answer.json()["data"])


def _wait_serving_the_new_day(cluster: Cluster, host: ApiHost, key: str) -> None:
    """Until ``host`` serves the second refresh's day (the first requests after a publish may
    be answered from the version before while the host fetches the new one)."""
    _wait_until(
        lambda: _last_price_day(host.url, key, cluster) == cluster.new_day.isoformat(),
        f"host {host.name} serves the new day",
    )


def test_a_refresh_on_the_pipeline_host_is_served_by_both_api_hosts(cluster: Cluster) -> None:
    assert cluster.second_version != cluster.first_version
    key = cluster.store.create_key(
        cluster.store.create_account(f"{uuid.uuid4().hex[:12]}@example.com", "pro").id
    ).key
    for host in cluster.hosts:
        _wait_serving_the_new_day(cluster, host, key)
        status = httpx.get(f"{host.url}/v1/status", timeout=30).json()
        assert status["version"] == cluster.second_version, status
        # each host keeps its own copy of the version, fetched from the bucket
        assert (host.home / "published" / f"{cluster.second_version}.duckdb").exists()
    assert _last_price_day(cluster.proxy.url, key, cluster) == cluster.new_day.isoformat()


def _seed_earlier_today(database_url: str, subject: str, requests: int) -> None:
    """Usage the account had earlier today (counted before this Redis held its day): on the
    control plane's day window only, where a host's counters load the day from."""
    now = dt.datetime.now(dt.UTC)
    with engine_for(database_url).begin() as connection:
        usage.add_to_window(
            connection, subject, "day", window_start(now, "day"), Count(requests=requests)
        )


def _wait_clear_of_midnight(margin: float = 120) -> None:
    """The count below spans a minute or so: start it in one UTC day (nothing else here
    depends on the day)."""
    now = dt.datetime.now(dt.UTC)
    to_midnight = (window_start(now, "day") + dt.timedelta(days=1) - now).total_seconds()
    if to_midnight < margin:
        time.sleep(to_midnight + 1)


def test_a_free_key_used_alternately_on_both_hosts_is_counted_exactly(cluster: Cluster) -> None:
    _wait_clear_of_midnight()
    account = cluster.store.create_account(f"{uuid.uuid4().hex[:12]}@example.com", "free")
    key = cluster.store.create_key(account.id).key
    # 60 requests earlier today (another hour): the 40 of this hour (Free's hourly allowance)
    # then reach the day's 100
    earlier = FREE_DAY - 40
    _seed_earlier_today(cluster.database_url, account.id, earlier)
    path = f"/v1/resolve/{cluster.ticker}"
    remaining = []
    for n in range(40):
        host = cluster.hosts[n % 2]
        answer = httpx.get(f"{host.url}{path}", headers={"X-API-Key": key}, timeout=60)
        assert answer.status_code == 200, (host.name, n, answer.text)
        remaining.append(int(answer.headers["X-RateLimit-Remaining-Day"]))
    # every request counted once, in turn, whichever host answered it
    assert remaining == list(range(FREE_DAY - earlier - 1, -1, -1))
    for host in [*cluster.hosts, *cluster.hosts]:
        refused = httpx.get(f"{host.url}{path}", headers={"X-API-Key": key}, timeout=60)
        assert refused.status_code == 429, refused.text
        assert refused.json()["code"] == "daily_limit_reached", refused.text
        assert "X-RateLimit-Remaining-Day" not in refused.headers
    usage_now = httpx.get(
        f"{cluster.hosts[0].url}/v1/auth/usage", headers={"X-API-Key": key}, timeout=30
    ).json()
    assert usage_now["requests_today"] == FREE_DAY, usage_now


def test_one_cached_answer_is_reused_across_hosts(cluster: Cluster) -> None:
    key = cluster.store.create_key(
        cluster.store.create_account(f"{uuid.uuid4().hex[:12]}@example.com", "pro").id
    ).key
    a, b = cluster.hosts
    path = f"/v1/prices/{cluster.ticker}"
    params = {"limit": 5, "cache-test": uuid.uuid4().hex}
    # both hosts serve the second version before the answer is cached under its label
    for host in (a, b):
        _wait_serving_the_new_day(cluster, host, key)
    first = httpx.get(f"{a.url}{path}", params=params, headers={"X-API-Key": key}, timeout=60)
    again = httpx.get(f"{b.url}{path}", params=params, headers={"X-API-Key": key}, timeout=60)
    assert first.status_code == again.status_code == 200, (first.text, again.text)
    assert "Age" not in first.headers and first.headers["X-Rows-Today"] == "5"
    # host B answered from the entry host A stored: Age, the same bytes, no rows added
    assert "Age" in again.headers and again.content == first.content
    assert "X-Rows-Today" not in again.headers


def test_every_webhook_delivery_is_sent_exactly_once(cluster: Cluster) -> None:
    engine = engine_for(cluster.database_url)
    with engine.connect() as connection:
        (changed,) = connection.execute(
            sa.select(schema.events.c.event_id)
            .join(schema.versions, schema.versions.c.id == schema.events.c.version_id)
            .where(schema.versions.c.label == cluster.second_version)
        ).scalars()
    paths = list(cluster.endpoints)
    expected = len(paths) * 2  # the refresh's data.changed and one webhook.test each

    def delivered() -> int:
        with engine.connect() as connection:
            return int(
                connection.scalar(
                    sa.select(sa.func.count())
                    .select_from(webhook_deliveries)
                    .where(webhook_deliveries.c.status == "delivered")
                )
            )

    _wait_until(lambda: delivered() == expected, f"{expected} deliveries delivered", timeout=120)
    time.sleep(2)  # ten more polling rounds of both workers: nothing may be sent again
    received = {path: cluster.receiver.received(path) for path in paths}
    by_path_and_id = Counter(
        (path, request.headers["webhook-id"]) for path in paths for request in received[path]
    )
    assert set(by_path_and_id.values()) == {1}, by_path_and_id.most_common(3)
    for path in paths:
        assert {r.headers["webhook-id"] for r in received[path]} & cluster.test_events
        assert changed in {r.headers["webhook-id"] for r in received[path]}, path
        for request in received[path]:
            standardwebhooks.Webhook(cluster.endpoints[path]).verify(request.body, request.headers)
    assert sum(by_path_and_id.values()) == expected
    with engine.connect() as connection:
        attempts = connection.execute(
            sa.select(webhook_attempts.c.delivery_id, webhook_attempts.c.outcome)
        ).all()
        statuses = Counter(
            connection.execute(sa.select(webhook_deliveries.c.status)).scalars().all()
        )
    assert statuses == {"delivered": expected}
    assert len(attempts) == len({a.delivery_id for a in attempts}) == expected
    assert {a.outcome for a in attempts} == {"delivered"}


def test_stopping_an_api_host_loses_no_request_at_the_proxy(cluster: Cluster) -> None:
    """Runs last: host A is stopped (SIGTERM) while requests go through the proxy."""
    key = cluster.store.create_key(
        cluster.store.create_account(f"{uuid.uuid4().hex[:12]}@example.com", "pro").id
    ).key
    a, b = cluster.hosts
    before = len(cluster.proxy.access_log())
    statuses: list[int | str] = []
    stop_sending = threading.Event()
    lock = threading.Lock()

    def send() -> None:
        with httpx.Client(base_url=cluster.proxy.url, timeout=60) as client:
            for n in range(400):  # bounded: at most 400 requests per sender
                if stop_sending.is_set():
                    return
                try:
                    answer = client.get(
                        f"/v1/prices/{cluster.ticker}",
                        params={"limit": 1 + n % 20},
                        headers={"X-API-Key": key},
                    )
                    status: int | str = answer.status_code
                except httpx.TransportError as error:
                    status = repr(error)
                with lock:
                    statuses.append(status)

    senders = [threading.Thread(target=send) for _ in range(4)]
    for sender in senders:
        sender.start()
    _wait_until(lambda: len(statuses) >= 40, "requests flow through the proxy")
    a.process.send_signal(signal.SIGTERM)
    # uvicorn stops gracefully (the requests it holds are answered), then raises the signal
    # again: the exit status is SIGTERM's
    assert a.process.wait(timeout=60) in (0, -signal.SIGTERM)
    assert "Application shutdown complete" in a.log.read_text()
    stopped_at = len(statuses)
    _wait_until(lambda: len(statuses) >= stopped_at + 80, "requests flow after the stop")
    stop_sending.set()
    for sender in senders:
        sender.join(timeout=120)
    assert statuses and set(statuses) == {200}, Counter(statuses).most_common(5)
    # both hosts answered before the stop, B alone after it
    lines = cluster.proxy.access_log()[before:]
    assert len(lines) == len(statuses)
    answered_by = Counter(line.split("upstream=[")[1].split("]")[0] for line in lines)
    assert answered_by[a.address] and answered_by[b.address], answered_by
    # after the stop the proxy still tries A in turn, is refused, and passes the request on
    assert answered_by[f"{a.address}, {b.address}"], answered_by
    assert all(line.startswith("200 ") for line in lines)
