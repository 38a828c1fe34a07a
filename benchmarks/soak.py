"""Soak: the service as it runs at scale, under mixed traffic for a set time, with a refresh in
the middle.

    .venv/bin/python benchmarks/soak.py                          # 10 minutes, 2 workers
    .venv/bin/python benchmarks/soak.py --minutes 30 --workers 4 --clients 12

Builds the small demo two weeks back in a temp home with its control plane on a fresh
PostgreSQL database (``--postgres``, the local server by default; dropped at the end), then runs
``findata serve --workers N`` with the response cache and the quota counters on Redis
(``--cache-url``) and ``findata webhooks worker``, delivering to an HTTPS receiver on loopback
(a throw-away CA, under the UNSAFE loopback setting) registered by a Max account.

``--clients`` threads send requests one after another for ``--minutes``: every data endpoint
(single securities over random windows, paging walks that follow ``next_cursor``, change-feed
walks from a response's ``change_cursor``, index rosters at random dates, managers), the usage
and status endpoints, and keyless search; each request picks a plan (Free, Pro, Max,
Redistribution) or no key. Half-way, one more trading day is added to landing and
``findata refresh`` publishes a new version while the traffic goes on.

Reported: requests, statuses (and error codes), p50/p90/p99 latency, the server's memory (the
sum of its processes' RSS) at the start, after the warm-up, before and after the refresh and at
the end; which version files the workers hold open at the end (old versions must be closed);
the webhook deliveries (signature-checked); and, after a clean stop (SIGTERM), the usage the
control plane recorded per account against what this driver saw. The run fails (exit 1) on any
answer that is not a spec answer (a 5xx, or an error body the catalogue does not know), on a
usage count that differs, on memory that grew more than ``--memory-growth`` after the warm-up,
or on a process that did not stop cleanly.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa
from served_homes import FINDATA, free_port, process_tree, rss_mib, wait_until_answering

from findata.accounts.tables import usage_counters, usage_log
from findata.clock import SystemClock, utc_today
from findata.contracts.endpoints import endpoint_names, load_endpoint_contract
from findata.contracts.errors import load_errors
from findata.demo.advance import add_price_day, next_session
from findata.demo.generate import DEFAULT_SEED, generate_demo
from findata.published.versions import open_version
from findata.settings import Settings
from findata.webhooks.dev_tls import make_loopback_certificates
from findata_client.webhooks import verify

PLANS = ("free", "pro", "max", "redistribution")
#: how often each caller sends (keyless: the spec's search without a key)
CALLER_WEIGHTS = {"free": 1, "pro": 3, "max": 4, "redistribution": 10, None: 1}
MEMORY_SAMPLE_SECONDS = 5.0


# --- the service under test -------------------------------------------------------------


@dataclass
class Service:
    """The home, its environment and the processes serving it."""

    home: Path
    env: dict[str, str]
    url: str = ""
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``findata ARGS`` on this home, to its end."""
        return subprocess.run(
            [str(FINDATA), *args], env=self.env, capture_output=True, text=True, check=False
        )

    def findata(self, *args: str) -> str:
        """``findata ARGS`` on this home; its standard output (stops the soak on failure)."""
        result = self.run(*args)
        if result.returncode != 0:
            sys.stderr.write(result.stderr[-3000:])
            raise SystemExit(f"findata {' '.join(args)} failed")
        return result.stdout

    def start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        """A long-running ``findata`` command (its output to a log file in the home)."""
        with open(self.home / f"{name}.log", "w") as log:  # the process has its own copy
            process = subprocess.Popen(
                [str(FINDATA), *args], env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        self.processes[name] = process
        return process

    def stop_all(self) -> None:
        """Stop what still runs (the soak ended early)."""
        for name in list(self.processes):
            self.stop(name)

    def stop(self, name: str, grace: float = 60) -> int | None:
        """SIGTERM, then wait; the exit status (None: it had to be killed)."""
        process = self.processes.pop(name)
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            return None


@contextmanager
def postgres_database(server: str) -> Iterator[str]:
    """A fresh database on ``server`` (a URL naming any database there), dropped afterwards."""
    admin = sa.create_engine(server, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)
    name = f"findata_soak_{uuid.uuid4().hex[:12]}"
    with admin.connect() as connection:
        connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield server.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as connection:
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def open_version_files(pids: list[int], published: Path) -> dict[int, set[str]]:
    """The published version files each process holds open."""
    held: dict[int, set[str]] = {}
    for pid in pids:
        names = set()
        for fd in Path(f"/proc/{pid}/fd").glob("*"):
            try:
                target = Path(os.readlink(fd))
            except OSError:
                continue
            if target.parent == published and target.suffix == ".duckdb":
                names.add(target.name)
        held[pid] = names
    return held


# --- the webhook receiver ---------------------------------------------------------------


class Receiver:
    """An HTTPS endpoint on loopback that keeps every delivery it gets and answers 204."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.deliveries: list[tuple[bytes, dict[str, str]]] = []
        kept = self.deliveries

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                kept.append((body, dict(self.headers.items())))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}/findata"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def events(self, secret: str) -> list[dict[str, Any]]:
        """Every delivery's event, each signature checked (raises on a bad one)."""
        return [dict(verify(body, headers, secret).raw) for body, headers in self.deliveries]


# --- the traffic ------------------------------------------------------------------------


@dataclass(frozen=True)
class Universe:
    """What the requests ask about, read from the published version."""

    tickers: list[str]
    entity_ids: list[int]
    indexes: list[str]
    manager_ids: list[str]
    first_day: dt.date
    as_of: dt.date


def read_universe(published: Path, scenarios: dict[str, Any]) -> Universe:
    """Tickers valid on the last day, securities with prices, indexes and managers."""
    (path,) = published.glob("*.duckdb")
    with open_version(path) as con:
        tickers = [
            t
            for (t,) in con.execute(
                "SELECT DISTINCT ticker FROM ticker_history WHERE valid_to IS NULL ORDER BY 1"
            ).fetchall()
        ]
        entity_ids = [
            e for (e,) in con.execute("SELECT DISTINCT entity_id FROM prices ORDER BY 1").fetchall()
        ]
        first, last = con.execute("SELECT min(date), max(date) FROM prices").fetchone()
        managers = [
            m for (m,) in con.execute("SELECT manager_id FROM managers ORDER BY 1").fetchall()
        ]
    return Universe(tickers, entity_ids, scenarios["indexes"], managers, first, last)


@dataclass
class Answer:
    """One request as the driver saw it."""

    at: float  # monotonic start
    seconds: float
    caller: str | None
    endpoint: str  # its contract's name, as the usage log names it
    status: int
    code: str | None
    rows: int
    cached: bool
    spec_answer: bool


class Driver:
    """Threads that send requests one after another until stopped, and what they saw."""

    def __init__(self, url: str, keys: dict[str, str], universe: Universe, seed: int) -> None:
        self.url = url
        self.keys = keys
        self.universe = universe
        self.seed = seed
        self.answers: list[Answer] = []
        self.transport_errors: Counter[str] = Counter()
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._errors = load_errors().errors

    def run(self, clients: int) -> list[threading.Thread]:
        threads = [
            threading.Thread(target=self._client, args=(n,), daemon=True) for n in range(clients)
        ]
        for thread in threads:
            thread.start()
        return threads

    def _client(self, number: int) -> None:
        rng = random.Random(self.seed * 1000 + number)
        callers = list(CALLER_WEIGHTS)
        weights = list(CALLER_WEIGHTS.values())
        with httpx.Client(base_url=self.url, timeout=60) as http:
            while not self.stop.is_set():
                caller = rng.choices(callers, weights)[0]
                endpoint, path, params, pages = self._request(rng, caller)
                for _page in range(pages):  # a walk follows next_cursor
                    body = self._send(http, caller, endpoint, path, params)
                    cursor = (body or {}).get("meta", {}).get("next_cursor")
                    if not cursor or self.stop.is_set():
                        break
                    follow = "since" if endpoint == "changes" else "cursor"
                    params = {**params, follow: cursor}

    def _request(
        self, rng: random.Random, caller: str | None
    ) -> tuple[str, str, dict[str, Any], int]:
        """A request a user of ``caller``'s plan might send (keyless: search or status): the
        endpoint's contract name, path, parameters and how many pages to walk at most."""
        u = self.universe
        if caller is None:
            return rng.choice(
                [
                    ("search", "/v1/search", {"q": rng.choice(u.tickers)[:2]}, 1),
                    ("status", "/v1/status", {}, 1),
                ]
            )
        ticker = rng.choice(u.tickers)
        start = u.first_day + dt.timedelta(days=rng.randrange((u.as_of - u.first_day).days))
        end = start + dt.timedelta(days=rng.randrange(1, 800))
        window = {"start": start.isoformat(), "end": end.isoformat()}
        index = rng.choice(u.indexes)
        manager = rng.choice(u.manager_ids)
        return rng.choice(
            [
                ("prices", f"/v1/prices/{ticker}", window, 1),
                ("prices", "/v1/prices", {"entity_id": rng.choice(u.entity_ids), **window}, 1),
                ("prices", f"/v1/prices/{ticker}", {"limit": rng.choice([50, 100, 250])}, 5),
                ("fundamentals", f"/v1/fundamentals/{ticker}", {}, 1),
                ("metrics", f"/v1/metrics/{ticker}", {}, 1),
                ("insiders", f"/v1/insiders/{ticker}", {}, 1),
                ("holdings", f"/v1/holdings/{ticker}", {}, 1),
                ("resolve", f"/v1/resolve/{ticker}", {}, 1),
                ("index", f"/v1/index/{index}", {}, 1),
                ("index", f"/v1/index/{index}", {"as_of": start.isoformat()}, 1),
                ("index_events", f"/v1/index/{index}/events", {}, 1),
                ("managers", "/v1/managers", {"search": rng.choice(u.tickers)[:2]}, 1),
                ("manager_holdings", f"/v1/managers/{manager}/holdings", {}, 1),
                ("changes", "/v1/changes", {"limit": 100}, 5),
                ("usage", "/v1/auth/usage", {}, 1),
                ("search", "/v1/search", {"q": ticker[:2]}, 1),
            ]
        )

    def _send(
        self,
        http: httpx.Client,
        caller: str | None,
        endpoint: str,
        path: str,
        params: dict[str, Any],
    ) -> dict[str, Any] | None:
        headers = {"X-API-Key": self.keys[caller]} if caller else {}
        started = time.monotonic()
        try:
            response = http.get(path, params=params, headers=headers)
        except httpx.TransportError as error:
            with self._lock:
                self.transport_errors[type(error).__name__] += 1
            return None
        seconds = time.monotonic() - started
        body = response.json() if response.content else None
        code = None if response.status_code == 200 else (body or {}).get("code")
        # the rows an answer counts: its data's items (resolve's data maps tickers)
        data = (body or {}).get("data") if response.status_code == 200 else None
        rows = len(data) if isinstance(data, list | dict) else 0
        answer = Answer(
            started,
            seconds,
            caller,
            endpoint,
            response.status_code,
            code,
            rows,
            "age" in response.headers,
            self._is_spec_answer(response.status_code, body),
        )
        with self._lock:
            self.answers.append(answer)
        return body if response.status_code == 200 else None

    def _is_spec_answer(self, status: int, body: dict[str, Any] | None) -> bool:
        """A 200, or a 4xx whose body is the catalogue's error of that status (a 5xx never is:
        the spec allows it, but a soak of valid requests must not meet one)."""
        if status == 200:
            return True
        if status >= 500 or not isinstance(body, dict):
            return False
        kind = self._errors.get(str(body.get("code")))
        return (
            kind is not None
            and kind.status == status == body.get("status")
            and isinstance(body.get("detail"), str)
        )


# --- the run ----------------------------------------------------------------------------


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def recorded_usage(
    database_url: str, account_ids: dict[str, str], since: dt.datetime
) -> dict[str, dict[str, Any]]:
    """Per plan, what the control plane recorded since ``since``: the usage log's calls by
    endpoint and status, its rows by endpoint and its request count, and the day counters'."""
    engine = sa.create_engine(database_url, poolclass=sa.NullPool)
    log, counters = usage_log.c, usage_counters.c
    recorded = {}
    with engine.connect() as connection:
        for plan, account in account_ids.items():
            mine = sa.and_(log.subject == account, log.at >= since)
            calls = connection.execute(
                sa.select(log.endpoint, log.status, sa.func.count(), sa.func.sum(log.rows))
                .where(mine)
                .group_by(log.endpoint, log.status)
            ).all()
            counted = connection.execute(
                sa.select(sa.func.coalesce(sa.func.sum(counters.requests), 0)).where(
                    counters.subject == account,
                    counters.window == "day",
                    counters.window_start
                    >= since.replace(hour=0, minute=0, second=0, microsecond=0),
                )
            ).scalar_one()
            logged_requests = connection.execute(
                sa.select(sa.func.coalesce(sa.func.sum(log.requests), 0)).where(mine)
            ).scalar_one()
            recorded[plan] = {
                "calls": Counter({(e, s): n for e, s, n, _ in calls}),
                "rows": Counter({e: r for e, s, _, r in calls if s == 200}),
                "logged_requests": logged_requests,
                "counted_requests": counted,
            }
    engine.dispose()
    return recorded


def build_home(service: Service) -> dict[str, Any]:
    """The small demo ending two weeks ago (so a trading day can be added), refreshed once;
    its scenarios."""
    today = utc_today(SystemClock())
    result = generate_demo(
        service.home / "landing",
        service.home / "demo",
        size="small",
        seed=DEFAULT_SEED,
        today=today - dt.timedelta(days=14),
    )
    service.findata("db", "upgrade")
    service.findata("refresh")
    return json.loads(result.scenarios_path.read_text())


def add_a_trading_day(service: Service, universe: Universe, refresh: dict[str, Any]) -> None:
    """One more session of prices for every security traded on the last day, refreshed (run
    in a thread beside the traffic); what happened goes into ``refresh``."""
    day = next_session(universe.as_of)
    (path,) = (service.home / "published").glob("*.duckdb")
    with open_version(path) as con:
        traded = con.execute("SELECT entity_id FROM prices WHERE date = ?", [universe.as_of])
        entity_ids = [e for (e,) in traded.fetchall()]
    add_price_day(service.home / "landing", day, entity_ids)
    started = time.monotonic()
    done = service.run("refresh")
    refresh["seconds"] = round(time.monotonic() - started, 1)
    if done.returncode != 0:
        refresh["failed"] = done.stderr[-2000:]
    else:  # the version is the last line (the logs are on stderr)
        refresh["version"] = done.stdout.strip().splitlines()[-1]
    refresh["finished"] = True


def summarize(answers: list[Answer], seconds: float) -> dict[str, Any]:
    """Requests, statuses, codes and latency percentiles."""
    latencies = [a.seconds * 1000 for a in answers]
    return {
        "requests": len(answers),
        "per_second": round(len(answers) / seconds, 1),
        "statuses": dict(sorted(Counter(a.status for a in answers).items())),
        "codes": dict(Counter(a.code for a in answers if a.code).most_common()),
        "p50_ms": round(percentile(latencies, 0.50), 1),
        "p90_ms": round(percentile(latencies, 0.90), 1),
        "p99_ms": round(percentile(latencies, 0.99), 1),
        "max_ms": round(max(latencies, default=0), 1),
        "cached_share": round(sum(a.cached for a in answers) / max(1, len(answers)), 3),
    }


def usage_differences(answers: list[Answer], recorded: dict[str, dict[str, Any]]) -> list[str]:
    """Where the control plane's usage differs from what the driver saw: each counted answer
    (by endpoint and status; 400, 402 and 429 are not counted, nor are the endpoints whose
    contract counts nothing), the rows of 200s (cached answers count none), and the day
    counters against the log."""
    uncounted = {n for n in endpoint_names() if load_endpoint_contract(n).counts_per == "none"}
    differences = []
    for plan, usage in recorded.items():
        mine = [a for a in answers if a.caller == plan and a.endpoint not in uncounted]
        seen = Counter((a.endpoint, a.status) for a in mine if a.status not in (400, 402, 429))
        for call in sorted(seen.keys() | usage["calls"].keys()):
            if seen[call] != usage["calls"][call]:
                differences.append(
                    f"{plan}: {usage['calls'][call]} {call} logged, the driver saw {seen[call]}"
                )
        rows: Counter[str] = Counter()
        for a in mine:
            if a.status == 200 and not a.cached:
                rows[a.endpoint] += a.rows
        for endpoint in sorted(rows.keys() | usage["rows"].keys()):
            if rows[endpoint] != usage["rows"][endpoint]:
                differences.append(
                    f"{plan}: {usage['rows'][endpoint]} {endpoint} rows logged, "
                    f"the driver got {rows[endpoint]}"
                )
        if usage["counted_requests"] != usage["logged_requests"]:
            differences.append(
                f"{plan}: day counters hold {usage['counted_requests']} requests, the log "
                f"{usage['logged_requests']}"
            )
    return differences


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--warmup-minutes", type=float, default=1)
    parser.add_argument(
        "--postgres", default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
    )
    parser.add_argument("--cache-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument(
        "--memory-growth",
        type=float,
        default=0.15,
        help="the most the server's memory may grow after the warm-up (0.15: 15 %%)",
    )
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    seconds = args.minutes * 60
    failures: list[str] = []
    with (
        tempfile.TemporaryDirectory(prefix="findata-soak-") as temp,
        postgres_database(args.postgres) as database_url,
        ExitStack() as cleanup,
    ):
        home = Path(temp)
        certificates = make_loopback_certificates(home / "tls")
        env = {
            **os.environ,
            "FINDATA_HOME": str(home),
            "FINDATA_DATABASE_URL": database_url,
            "FINDATA_CACHE_URL": args.cache_url,
            "DAGSTER_HOME": str(home / "dagster"),
            "FINDATA_WEBHOOKS_ALLOW_PRIVATE": "1",  # UNSAFE: the receiver is on loopback
            "FINDATA_WEBHOOKS_CA_BUNDLE": str(certificates.ca),
        }
        env.pop("FINDATA_USAGE_COUNTERS", None)  # auto: Redis, as the cache is there
        service = Service(home, env)
        cleanup.callback(service.stop_all)  # before the home and database go
        print(
            f"building the demo (two weeks back) in {home} on {database_url.rsplit('/', 1)[1]} …",
            file=sys.stderr,
        )
        scenarios = build_home(service)
        universe = read_universe(home / "published", scenarios)
        keys, account_ids = {}, {}
        for plan in PLANS:
            made = json.loads(
                service.findata(
                    "keys", "create", "--email", f"soak-{plan}@example.com", "--plan", plan
                )
            )
            keys[plan], account_ids[plan] = made["key"], made["account_id"]
        receiver = Receiver(certificates.cert, certificates.key)
        hook = json.loads(
            service.findata("webhooks", "add", "--account", account_ids["max"], receiver.url)
        )
        port = free_port()
        service.url = f"http://127.0.0.1:{port}"
        server = service.start(
            "serve", "serve", "--port", str(port), "--workers", str(args.workers)
        )
        service.start("worker", "webhooks", "worker")
        if not wait_until_answering(f"{service.url}/v1/status", server):
            raise SystemExit(f"the server did not start (see {home / 'serve.log'})")
        time.sleep(2)  # every worker up
        since = dt.datetime.now(dt.UTC)
        memory: list[tuple[float, float]] = []
        started = time.monotonic()
        marks = {"start": rss_mib(process_tree(server.pid))}
        driver = Driver(service.url, keys, universe, args.seed)
        threads = driver.run(args.clients)
        refresh: dict[str, Any] = {}
        warmup = args.warmup_minutes * 60
        while (elapsed := time.monotonic() - started) < seconds:
            memory.append((elapsed, rss_mib(process_tree(server.pid))))
            if elapsed >= warmup and "after warm-up" not in marks:
                marks["after warm-up"] = memory[-1][1]
            if elapsed >= seconds / 3 and not refresh:
                marks["before refresh"] = memory[-1][1]
                refresh["at"] = round(elapsed)
                refreshing = threading.Thread(
                    target=add_a_trading_day, args=(service, universe, refresh)
                )
                refreshing.start()
            if "finished" in refresh and "after refresh" not in marks:
                marks["after refresh"] = memory[-1][1]
            time.sleep(MEMORY_SAMPLE_SECONDS)
        driver.stop.set()
        for thread in threads:
            thread.join(timeout=120)
        refreshing.join()
        elapsed = time.monotonic() - started
        # workers close an old version once no request read it for version_idle_seconds
        since_new_version = elapsed - refresh["at"] - refresh["seconds"]
        idle = Settings(home=home).version_idle_seconds
        old_versions_checked = "version" in refresh and since_new_version > idle + 10
        pids = process_tree(server.pid)
        marks["end"] = rss_mib(pids)
        held = open_version_files(pids, home / "published")
        time.sleep(3)  # the webhook worker polls
        events = receiver.events(hook["secret"])
        statuses = {"serve": service.stop("serve"), "worker": service.stop("worker")}
        recorded = recorded_usage(database_url, account_ids, since)
    report = summarize(driver.answers, elapsed)
    print(
        f"\nsoak: {elapsed / 60:.1f} min, {args.workers} workers on PostgreSQL + Redis, "
        f"{args.clients} clients"
    )
    print(json.dumps(report, indent=2))
    print("memory (MiB, server processes):", json.dumps({k: round(v) for k, v in marks.items()}))
    print(
        "memory over time:",
        " ".join(f"{t:.0f}s:{m:.0f}" for t, m in memory[:: max(1, len(memory) // 20)]),
    )
    print("refresh:", json.dumps(refresh))
    print("version files held at the end:", {pid: sorted(n) for pid, n in held.items() if n})
    print("webhook events:", [(e["type"], e.get("id")) for e in events])
    print("exit statuses:", statuses)
    for plan, usage in recorded.items():
        mine = Counter(a.status for a in driver.answers if a.caller == plan)
        print(
            f"usage {plan}: {usage['calls'].total()} calls logged, {usage['rows'].total()} rows, "
            f"{usage['counted_requests']} requests counted; the driver saw {dict(mine)}"
        )
    bad = [a for a in driver.answers if not a.spec_answer]
    if bad or driver.transport_errors:
        failures.append(
            f"{len(bad)} answers outside the spec "
            f"{Counter((a.status, a.code, a.endpoint) for a in bad).most_common(5)}, "
            f"transport errors {dict(driver.transport_errors)}"
        )
    failures += usage_differences(driver.answers, recorded)
    growth = marks["end"] / marks["after warm-up"] - 1
    if growth > args.memory_growth:
        failures.append(f"memory grew {growth:.0%} after the warm-up")
    if "failed" in refresh:
        failures.append(f"the refresh mid-run failed: {refresh['failed']}")
    old = {n for names in held.values() for n in names} - {f"{refresh.get('version')}.duckdb"}
    if old and old_versions_checked:
        failures.append(f"old version files still open at the end: {sorted(old)}")
    if not old_versions_checked:
        print("(the run ended too soon after the refresh to check that the old version closed)")
    if not any(e["type"] == "data.changed" for e in events):
        failures.append("no data.changed delivery reached the receiver")
    if any(status != 0 for status in statuses.values()):
        failures.append(f"a process did not stop cleanly: {statuses}")
    for failure in failures:
        print("FAIL:", failure)
    print("soak passed" if not failures else "soak FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
