"""All configuration in one place, read from ``FINDATA_*`` environment variables."""

from __future__ import annotations

import ipaddress
import os
import socket
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def _usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system has one: a container's
    or taskset's limit, not the machine's count)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


class Settings(BaseSettings):
    """Process-wide settings; every path a run writes lives under ``home``."""

    model_config = SettingsConfigDict(env_prefix="FINDATA_", extra="ignore")

    home: Path = Field(default=Path(".findata"), description="Everything a run writes.")
    database_url: str | None = Field(
        default=None,
        description="Control-plane database; default SQLite under home.",
    )
    base_url: str = Field(
        default="http://127.0.0.1:8000",
        description="Where clients reach the API (links in e-mail, change-feed URLs in events); "
        "`findata serve` and `findata demo` default it to where they serve "
        "(`served_base_url`).",
    )
    client_latest_version: str = Field(
        default="1.0.0",
        pattern=r"^\d+\.\d+\.\d+$",
        description="The recommended findata-python version; older clients get a notice.",
    )
    cache_url: str | None = Field(
        default=None,
        description="redis://… to share the response cache between workers; default: each "
        "worker caches in memory.",
    )
    request_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        description="A data request still running after this many seconds answers 504 "
        "request_timeout (its queries are interrupted).",
    )
    query_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        description="A DuckDB query running longer is interrupted and answers 504 query_timeout.",
    )
    workers: int | None = Field(
        default=None,
        ge=1,
        description="API worker processes of `findata serve` (default: one per core on "
        "PostgreSQL or with a Redis cache_url; one on the embedded SQLite default, whose usage "
        "counters then live in that one process).",
    )
    usage_counters: Literal["auto", "memory", "redis", "database"] = Field(
        default="auto",
        description="Where the live quota counts are kept: `memory` (one serving process per "
        "control plane), `redis` (cache_url; shared by every worker and host), `database` (a "
        "control-plane transaction per request). `auto`: redis when cache_url is set, memory "
        "for one worker on SQLite, else database. Memory and Redis write usage to the control "
        "plane in batches: a crash loses at most about one second of counted usage.",
    )
    quotas_enabled: bool = Field(
        default=True,
        description="Count requests and enforce the plans' quotas (off only to measure their "
        "cost in benchmarks/api.py).",
    )
    cursor_secret: str | None = Field(
        default=None,
        description="Signs page cursors; set the same value on every host (default: a random "
        "secret kept under home, shared by one host's workers).",
    )
    webhooks_allow_private: bool = Field(
        default=False,
        description="UNSAFE: let webhook endpoints on loopback through (local development only).",
    )
    webhooks_ca_bundle: Path | None = Field(
        default=None, description="Extra CA the webhook sender trusts (local development)."
    )
    webhooks_secrets_key: str | None = Field(
        default=None,
        description="Fernet key that encrypts webhook signing secrets at rest; set the same value "
        "on every host (default: a random key kept under home).",
    )
    dashboard_secret: str | None = Field(
        default=None,
        description="Signs dashboard sessions and e-mail links; set the same value on every host "
        "(default: a random secret kept under home).",
    )
    mail_secrets_key: str | None = Field(
        default=None,
        description="Fernet key that encrypts queued e-mail carrying a secret link (verification, "
        "password reset); set the same value on every host (default: a random key under home).",
    )
    smtp_url: str | None = Field(
        default=None,
        description="Where e-mail is sent: smtp://user:password@host:port (STARTTLS when the "
        "server offers it; user and password URL-encoded), smtps://… (TLS from the start), "
        "smtp://host:port (no login); default: each message is written as an .eml file under "
        "home/mail.",
    )
    mail_from: str = Field(
        default="findata <no-reply@localhost>",
        description="The From of e-mail to account holders.",
    )
    webhooks_poll_seconds: float = Field(
        default=5.0, gt=0, description="How often the delivery worker looks for due deliveries."
    )
    row_store_mb: float = Field(
        default=256.0,
        ge=0,
        description="Memory each API worker may use to keep rows of open versions "
        "serialised (daily prices per security and row shape; insider "
        "lines, fundamentals and metrics per company; positions per security and per manager; "
        "a version's index rosters, entities for search, resolve's memberships and links); "
        "least recently used first out. 0 turns it off: every request asks DuckDB.",
    )
    response_cache_mb: float = Field(
        default=128.0,
        ge=0,
        description="Memory each API worker may use for its response cache (answers' bodies, "
        "least recently used out first) when there is no cache_url; with one, answers are kept "
        "in Redis, bounded by Redis's own maxmemory. 0: nothing is kept.",
    )
    served_tables_mb: float = Field(
        default=512.0,
        ge=0,
        description="Memory each API worker may use to hold the current version's datasets as "
        "native in-memory DuckDB tables sorted by key (a query on them is several times faster "
        "than on the version file's Parquet-backed views); the smallest datasets are copied "
        "first, those beyond the budget are read from the views. 0: every dataset from the "
        "views.",
    )
    mcp_result_bytes: int = Field(
        default=32_768,
        ge=1024,
        description="The MCP tools' result budget: a tool call without `limit` returns the rows "
        "whose JSON fits in this many bytes, `meta.next_cursor` (or `next_offset`) going on "
        "from the first row left out.",
    )
    published_url: str | None = Field(
        default=None,
        pattern=r"^s3://[^/]+(/.*)?$",
        description="s3://bucket/prefix: published versions live in this S3-compatible "
        "bucket. The pipeline uploads a version (its missing parts, then its file) before "
        "making it current, and keeps home/published as its working copy; every API host "
        "fetches the current version once into its own home/published and serves it from there "
        "(a request during the fetch is served from the version before). Default: "
        "home/published alone (one host).",
    )
    s3_endpoint_url: str | None = Field(
        default=None,
        description="The S3-compatible server of published_url (MinIO, Ceph, a loopback server "
        "in tests); default: AWS's. Credentials and region come from the standard AWS "
        "environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION, or a "
        "profile).",
    )
    version_retention_hours: float = Field(
        default=24.0,
        ge=0,
        description="A published version that is no longer current is removed (its file) this "
        "long after the version that replaced it was published; a page cursor on it then "
        "answers 400. The refresh's publish step removes them (from the bucket of "
        "published_url too).",
    )
    build_memory_limit: str = Field(
        default="3GB",
        pattern=r"^\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB|%)$",
        description="The memory DuckDB may use while dbt builds the marts and while the raw "
        "step merges parsed landing rows with its cache (DuckDB's ``memory_limit``; it spills "
        "joins, aggregates and sorts to disk beyond it). The large "
        "demo's builds peak at ~3.7 GB with 3GB, at the same speed as with DuckDB's default of "
        "80 % of RAM (7.3 GB).",
    )
    build_workers: int = Field(
        default_factory=_usable_cpus,
        ge=1,
        le=256,
        description="dbt's threads in a refresh's build (default: the CPUs this process may "
        "run on).",
    )
    version_idle_seconds: float = Field(
        default=60.0,
        ge=0,
        description="An API worker closes its connection to a published version that is no "
        "longer current once no request has read it for this long (a later request, say a "
        "cursor page, reopens it).",
    )
    shutdown_grace_seconds: float = Field(
        default=30.0,
        gt=0,
        description="On SIGTERM or SIGINT a long-running command (serve, ui, webhooks worker, "
        "demo while serving) takes no new work and lets what is in flight finish for at most "
        "this long, then stops what remains; a second signal stops it at once.",
    )
    scheduled_refresh: bool = Field(
        default=True,
        description="The daily_refresh schedule and the new_landing_files sensor run as soon as "
        "`findata ui`'s daemon starts (their default status in Dagster); false: they start "
        "stopped, to be turned on in the UI. A status set in the UI is kept by the instance "
        "and wins over this.",
    )
    metrics_enabled: bool = Field(
        default=True,
        description="Count requests, quota refusals and cache hits for GET /metrics (off only "
        "to measure their cost in benchmarks/api.py; /metrics then answers 404).",
    )
    metrics_token: str | None = Field(
        default=None,
        description="GET /metrics answers loopback clients; others only with "
        "`Authorization: Bearer <token>` when this is set (else 404).",
    )
    log_format: Literal["text", "json"] = Field(
        default="text",
        description="Log lines as readable text, or one JSON object a line for a log system.",
    )
    request_log: bool = Field(
        default=True,
        description="One log line per API request (route template, status, duration, account "
        "id; never a key); off only to measure its cost in benchmarks/api.py.",
    )
    sec_user_agent: str | None = Field(
        default=None,
        description="Who fetches from the SEC, as its fair-access rules ask: a name and a "
        "contact address, 'Company contact@example.com'. `findata sec fetch` refuses to start "
        "without one.",
    )
    sec_www_url: str = Field(
        default="https://www.sec.gov",
        description="EDGAR's archive host (form indexes, filings, the company list); a mirror "
        "or a test server may stand in.",
    )
    sec_data_url: str = Field(
        default="https://data.sec.gov",
        description="The SEC's JSON host (submissions, companyfacts).",
    )
    sec_tickers: list[str] = Field(
        default=[],
        description="The companies the scheduled SEC fetch (and `findata sec fetch` without "
        "--tickers/--ciks/--exchanges) covers, by ticker; with sec_ciks and sec_exchanges all "
        "empty, every company (a JSON list).",
    )
    sec_ciks: list[int] = Field(
        default=[], description="The companies (or 13F managers) it covers, by CIK (a JSON list)."
    )
    sec_exchanges: list[str] = Field(
        default=[], description="The companies it covers, by exchange: NYSE, Nasdaq (a JSON list)."
    )
    sec_forms: list[str] = Field(
        default=["4", "13F-HR", "10-K", "10-Q"],
        description="The forms whose filings it fetches (amendments included; a JSON list).",
    )
    sec_requests_per_second: float = Field(
        default=5.0,
        gt=0,
        le=10,
        description="One limit for every process fetching from the SEC on this home (the SEC "
        "allows 10; a 429 or 403 halves it for the next sec_lowered_minutes).",
    )
    sec_lowered_minutes: float = Field(
        default=10.0,
        gt=0,
        description="How long a rate halved after a 429 or 403 stays halved (the SEC blocks an "
        "address for about ten minutes after it goes over the limit).",
    )
    sec_retries: int = Field(
        default=5,
        ge=0,
        le=20,
        description="Retries of one SEC request after a 429, 403, 5xx, a broken connection or a "
        "body that is not what was asked for (an HTML page, a truncated zip), with "
        "exponential backoff.",
    )
    sec_workers: int = Field(
        default=4,
        ge=1,
        le=16,
        description="Requests a fetch keeps in flight at once (threads; all under the one rate "
        "limit).",
    )
    service_domains: list[str] = Field(
        default=[],
        description="Domains of the service itself and of its hosting platform; webhook URLs "
        "under them are refused (the host of base_url is always refused too).",
    )

    @cached_property
    def home_dir(self) -> Path:
        """``home`` made absolute, so a later ``chdir`` cannot move it."""
        return self.home.expanduser().resolve()

    @property
    def serve_workers(self) -> int:
        """``workers``, or its default: the cores where the counters are shared (PostgreSQL or
        Redis), one on SQLite."""
        if self.workers is not None:
            return self.workers
        shared = self.cache_url is not None or not self.control_plane_url.startswith("sqlite")
        return (os.cpu_count() or 1) if shared else 1

    @property
    def counters_kind(self) -> Literal["memory", "redis", "database"]:
        """Where the live quota counts are kept (``usage_counters`` with ``auto`` decided)."""
        if self.usage_counters != "auto":
            return self.usage_counters
        if self.cache_url is not None:
            return "redis"
        if self.control_plane_url.startswith("sqlite") and self.serve_workers == 1:
            return "memory"
        return "database"

    @property
    def landing_dir(self) -> Path:
        """Raw files in their publishers' formats."""
        return self.home_dir / "landing"

    @property
    def published_dir(self) -> Path:
        """Immutable published versions (DuckDB files)."""
        return self.home_dir / "published"

    @property
    def demo_dir(self) -> Path:
        """The demo's manifest (``scenarios.json``)."""
        return self.home_dir / "demo"

    @property
    def build_dir(self) -> Path:
        """The pipeline's working files: the build warehouse, dbt artifacts."""
        return self.home_dir / "build"

    @property
    def warehouse_path(self) -> Path:
        """The build warehouse DuckDB file (raw tables and dbt's models)."""
        return self.build_dir / "warehouse.duckdb"

    @property
    def dbt_target_dir(self) -> Path:
        """dbt's artifacts and logs (manifest, run results): beside the warehouse, never inside
        the installed dbt project."""
        return self.build_dir / "dbt"

    @property
    def fetch_dir(self) -> Path:
        """The fetchers' own state: what was fetched (manifest), the shared rate limit, form
        indexes and bulk archives, files being downloaded (never in landing until complete)."""
        return self.home_dir / "fetch"

    @property
    def dagster_home(self) -> Path:
        """The Dagster instance directory."""
        return self.home_dir / "dagster"

    @property
    def control_plane_url(self) -> str:
        """The control-plane database URL, SQLite under home unless configured."""
        return self.database_url or f"sqlite:///{self.home_dir / 'control.sqlite'}"


def served_base_url(host: str, port: int) -> str:
    """Where an API served on ``host`` and ``port`` is reached: the default ``base_url`` of
    ``findata serve`` and ``findata demo``. A wildcard address (0.0.0.0, ::) is no address to
    open: this machine's host name stands for it (it reaches every interface the server
    listens on); an IPv6 address is written in brackets."""
    address = host.strip("[]")
    if not address:  # uvicorn's every interface too
        return f"http://{socket.gethostname()}:{port}"
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:  # a host name
        return f"http://{host}:{port}"
    if ip.is_unspecified:
        return f"http://{socket.gethostname()}:{port}"
    return f"http://[{ip}]:{port}" if ip.version == 6 else f"http://{ip}:{port}"


def get_settings() -> Settings:
    """Read the settings from the environment now (not cached: tests change it)."""
    return Settings()
