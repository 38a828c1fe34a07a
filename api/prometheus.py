"""The service's Prometheus metrics and ``GET /metrics`` (not the spec's ``/v1/metrics`` data
endpoint).

``findata serve`` runs its workers in prometheus-client's multiprocess mode: it gives each run
an empty folder in ``PROMETHEUS_MULTIPROC_DIR`` before any worker imports prometheus_client
(``api/serve.py``), every worker counts into its own files there, and whichever worker answers
``/metrics`` adds them all up, so ``--workers N`` report one set. Without that variable (the
API built in a test process) the process's own registry is served.

Counted where it happens: requests by route template, method and status with their latency
(``api/front_door.py``), quota refusals by reason (``api/quotas.py``), response-cache hits and
misses (``api/data_requests.py``). Read at scrape time, from the control plane, so that they
cover every worker and host: the age of the current published version (data freshness), webhook
deliveries by status, and the delivery queue's depth and oldest due age. Read at scrape time
from the Dagster instance (``orchestration/refresh_history.py``), where every refresh run is
recorded whichever process ran it: the last successful refresh's end and duration, and the
failed refreshes.

Process metrics: prometheus-client's ``ProcessCollector`` reads ``/proc`` of one process, and
in multiprocess mode nothing of it is shared, so the worker that answers reads it for every
process of the server: itself, the other live workers (each worker marks itself in the
``findata_api_worker`` gauge, kept per pid by the multiprocess folder, gone when it exits) and
the supervisor (``findata serve --workers N``'s parent process, where the delivery worker and
account jobs run). Each series carries a ``pid`` label: memory and CPU are per process, and
added up they would hide a worker that grows. ``python_info`` and ``findata_build_info`` are
the same in every process: one series. (``python_gc_*``, which the library reads from its own
process only, is not exported by ``findata serve``.)

No label holds a key, an address, a ticker or a query string: routes are templates
(``/v1/prices/{tickers}``), the other labels come from short fixed lists.
"""

from __future__ import annotations

import datetime as dt
import hmac
import importlib.metadata
import ipaddress
import logging
import multiprocessing
import os
from collections.abc import Iterable, Iterator

import sqlalchemy as sa
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from findata.clock import Clock
from findata.orchestration.refresh_history import RefreshRuns
from findata.published.versions import current_version
from findata.settings import Settings
from findata.webhooks.tables import webhook_deliveries

log = logging.getLogger("findata.api.metrics")

MULTIPROCESS_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
METRICS_PATH = "/metrics"
#: the route label of a request no route matched (its path is never a label)
UNMATCHED_ROUTE = "unmatched"

REQUESTS = Counter(
    "findata_http_requests",
    "HTTP requests answered, by route template, method and status.",
    ["route", "method", "status"],
)
REQUEST_SECONDS = Histogram(
    "findata_http_request_duration_seconds",
    "Time to answer an HTTP request, by route template and method.",
    ["route", "method"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
QUOTA_REFUSALS = Counter(
    "findata_quota_refusals",
    "Requests refused by a quota (429), by reason (the error code).",
    ["reason"],
)
CACHE_LOOKUPS = Counter(
    "findata_response_cache_lookups",
    "Response-cache lookups of data requests, by result (hit or miss).",
    ["result"],
)
#: 1 per live worker: its pid label is how the worker answering a scrape finds the others
LIVE_WORKER = Gauge(
    "findata_api_worker",
    "1 for each API worker process serving, by pid.",
    multiprocess_mode="liveall",
)
WORKER_METRIC = "findata_api_worker"


class ApiMetrics:
    """What the API counts (``create_app`` makes one unless ``FINDATA_METRICS_ENABLED`` is
    off).

    Every request counts, so the labelled series a request adds to are looked up once per
    (route, method, status) and kept: ``labels()`` takes a lock and builds its key each time
    (about 3 µs of the 7 µs a request's counting took)."""

    def __init__(self) -> None:
        self._answered: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}
        # made at the first lookup: a worker's files in the multiprocess folder appear when it
        # first counts (the metrics test tells the workers that counted by them)
        self._cache_lookups: dict[bool, Counter] = {}
        self._refresh_runs: RefreshRuns | None = None
        LIVE_WORKER.set(1)

    def refresh_runs(self, settings: Settings) -> RefreshRuns:
        """The reader of the refresh runs (made at the first scrape, then kept)."""
        if self._refresh_runs is None:
            self._refresh_runs = RefreshRuns(settings)
        return self._refresh_runs

    def request_answered(self, route: str, method: str, status: int, seconds: float) -> None:
        """One answered request."""
        series = self._answered.get((route, method, status))
        if series is None:
            # two threads may both get here: labels() gives both the same series
            series = (
                REQUESTS.labels(route, method, str(status)),
                REQUEST_SECONDS.labels(route, method),
            )
            self._answered[(route, method, status)] = series
        count, duration = series
        count.inc()
        duration.observe(seconds)

    def quota_refused(self, reason: str) -> None:
        """One request refused by a quota; ``reason`` is the 429's error code."""
        QUOTA_REFUSALS.labels(reason).inc()

    def cache_looked_up(self, hit: bool) -> None:
        """One response-cache lookup."""
        series = self._cache_lookups.get(hit)
        if series is None:
            series = self._cache_lookups[hit] = CACHE_LOOKUPS.labels("hit" if hit else "miss")
        series.inc()


class ControlPlaneCollector(Collector):
    """The metrics read from the control plane when scraped (two small queries, the second on
    the deliveries' due index)."""

    def __init__(self, engine: sa.Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock

    def collect(self) -> Iterator[Metric]:
        now = self.clock.now()
        freshness = GaugeMetricFamily(
            "findata_published_version_age_seconds",
            "Seconds since the current published version was published (absent before the "
            "first publish).",
        )
        by_status = GaugeMetricFamily(
            "findata_webhook_deliveries",
            "Webhook deliveries on record (the delivery log's 30 days), by status.",
            labels=["status"],
        )
        depth = GaugeMetricFamily(
            "findata_webhook_queue_depth",
            "Webhook deliveries waiting to be sent (pending, due now or later) or being sent.",
        )
        oldest = GaugeMetricFamily(
            "findata_webhook_queue_oldest_due_age_seconds",
            "Seconds the longest-waiting due delivery has been due (0 when none is due).",
        )
        D = webhook_deliveries
        with self.engine.connect() as connection:
            version = current_version(connection)
            counts = connection.execute(
                sa.select(D.c.status, sa.func.count()).group_by(D.c.status)
            ).all()
            due_since = connection.execute(
                sa.select(sa.func.min(D.c.next_attempt_at)).where(
                    D.c.status == "pending", D.c.next_attempt_at <= now
                )
            ).scalar_one()
        if version is not None:
            freshness.add_metric([], (now - _utc(version.published_at)).total_seconds())
        statuses = dict.fromkeys(("pending", "delivering", "delivered", "failed"), 0)
        statuses.update({"no_retries_left": 0, **{status: count for status, count in counts}})
        for status, count in statuses.items():
            by_status.add_metric([status], count)
        depth.add_metric([], statuses["pending"] + statuses["delivering"])
        oldest.add_metric([], 0.0 if due_since is None else (now - _utc(due_since)).total_seconds())
        yield from (freshness, by_status, depth, oldest)


class RefreshCollector(Collector):
    """The refresh runs on record in the Dagster instance, read when scraped."""

    def __init__(self, runs: RefreshRuns) -> None:
        self.runs = runs

    def collect(self) -> Iterator[Metric]:
        try:
            history = self.runs.read()
        except Exception:  # the rest of the scrape is still worth answering
            log.warning("the refresh runs could not be read", exc_info=True)
            return
        gauges = (  # each absent before the first run of its kind
            (
                "findata_refresh_last_success_timestamp_seconds",
                "When the newest successful refresh run ended (Unix time).",
                history.last_success_end,
            ),
            (
                "findata_refresh_last_success_duration_seconds",
                "How long the newest successful refresh run took, start to end.",
                history.last_success_seconds,
            ),
            (
                "findata_refresh_last_failure_timestamp_seconds",
                "When the newest failed refresh run ended (Unix time).",
                history.last_failure_end,
            ),
        )
        for name, text, value in gauges:
            if value is not None:
                yield GaugeMetricFamily(name, text, value=value)
        yield CounterMetricFamily(
            "findata_refresh_failures",
            "Refresh runs that failed (nothing of them was published).",
            value=history.failures,
        )


class ServerProcesses(Collector):
    """The multiprocess folder's metrics, then ``process_*`` of every live process of the
    server, each series labelled with its ``pid`` (see the module's docstring)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def collect(self) -> Iterator[Metric]:
        workers: set[int] = set()
        for family in multiprocess.MultiProcessCollector(None, self.path).collect():
            if family.name == WORKER_METRIC:
                # a worker killed outright leaves its mark behind: only the live ones count
                family.samples = [s for s in family.samples if _alive(int(s.labels["pid"]))]
                workers = {int(s.labels["pid"]) for s in family.samples}
            yield family
        supervisor = multiprocessing.parent_process()
        pids = sorted(workers | {os.getpid()} | ({supervisor.pid} if supervisor else set()))
        yield from process_metrics([pid for pid in pids if pid is not None])


def process_metrics(pids: list[int]) -> Iterator[Metric]:
    """``ProcessCollector``'s metrics of each of ``pids``, one family each, a ``pid`` label on
    every series."""
    families: dict[str, Metric] = {}
    for pid in pids:
        for family in ProcessCollector(pid=lambda pid=pid: pid, registry=None).collect():
            merged = families.setdefault(
                family.name, Metric(family.name, family.documentation, family.type)
            )
            for sample in family.samples:
                merged.add_sample(sample.name, {**sample.labels, "pid": str(pid)}, sample.value)
    yield from families.values()


class BuildInfo(Collector):
    """``findata_build_info{version=...} 1``: the installed findata."""

    def collect(self) -> Iterator[Metric]:
        info = InfoMetricFamily("findata_build", "The findata version serving.")
        info.add_metric([], {"version": importlib.metadata.version("findata")})
        yield info


class _ThisProcess(Collector):
    """The process's own registry (no multiprocess folder: a test process): its counts,
    ``process_*``, ``python_gc_*`` and ``python_info`` (the library's default collectors)."""

    def collect(self) -> Iterable[Metric]:
        return REGISTRY.collect()


def metrics_exposition(engine: sa.Engine, clock: Clock, refresh_runs: RefreshRuns) -> bytes:
    """Every metric in Prometheus's text format: the workers' counts and processes, the build,
    then the control plane's and the refresh runs'."""
    registry = CollectorRegistry()
    path = os.environ.get(MULTIPROCESS_DIR_VARIABLE)
    if path:
        registry.register(ServerProcesses(path))
        PlatformCollector(registry)
    else:
        registry.register(_ThisProcess())
    registry.register(BuildInfo())
    registry.register(ControlPlaneCollector(engine, clock))
    registry.register(RefreshCollector(refresh_runs))
    return generate_latest(registry)


def may_scrape(request: Request, token: str | None) -> bool:
    """Loopback clients may; others only with ``Authorization: Bearer <token>`` when a token
    is set. (Behind a reverse proxy on this host, uvicorn takes the client from
    ``X-Forwarded-For``, so a proxied request counts as from elsewhere.)"""
    host = request.client.host if request.client else ""
    try:
        if ipaddress.ip_address(host).is_loopback:
            return True
    except ValueError:
        pass
    if not token:
        return False
    scheme, _, sent = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(sent.encode(), token.encode())


def metrics_route(request: Request) -> Response:
    """``GET /metrics``: the exposition, or to a client that may not scrape (and when metrics
    are off) the 404 of a path that does not exist."""
    state = request.app.state
    if state.metrics is None or not may_scrape(request, state.settings.metrics_token):
        raise HTTPException(404)
    exposition = metrics_exposition(
        state.engine, state.clock, state.metrics.refresh_runs(state.settings)
    )
    return Response(exposition, media_type=CONTENT_TYPE_LATEST)


def mark_worker_dead() -> None:
    """This worker's live gauges leave the multiprocess folder (on its way out)."""
    if os.environ.get(MULTIPROCESS_DIR_VARIABLE):
        multiprocess.mark_process_dead(os.getpid())


def _alive(pid: int) -> bool:
    """A process ``pid`` exists (signal 0 only asks)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: it exists
        return True
    return True


def _utc(moment: dt.datetime) -> dt.datetime:
    """A stored time as aware UTC (SQLite gives them back naive)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)
