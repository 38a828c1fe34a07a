"""Where one request's time goes: ``/v1/prices`` asked many times in process, with cProfile on
the threads that serve it (the whole data request: quotas, SQL, DuckDB, the envelope; the key
check, a FastAPI dependency bound when the routes are made, is not profiled), the own time
summed by part of the stack and the costliest functions printed.

    .venv/bin/python benchmarks/profile_request.py [--home H] [--requests 2000] [--top 25]
    .venv/bin/python benchmarks/profile_request.py --home H --extra interval=1w
    .venv/bin/python benchmarks/profile_request.py --home H \
        --database-url postgresql+psycopg://postgres@127.0.0.1:5432/DB --cache-url redis://…/7

Uses the home's published version (building the small demo when there is none) and a
Redistribution key it creates; each request asks one security's last year with a new window
(no response-cache hits), as ``api_floor.py`` does (``--cached``: the same URL every time). The
HTTP layer (uvicorn, the test client) is not profiled; the profiler slows what it measures, so
read the figures as shares.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import functools
import io
import os
import pstats
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from fastapi.testclient import TestClient
from served_homes import prepare_home

from findata.published.versions import open_version

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[1]
PARTS = {  # a frame's file → the part it is counted in (the first that matches)
    str(ROOT / "accounts"): "accounts (key check, quota counters)",
    "/sqlalchemy/": "control plane (SQLAlchemy)",
    "/sqlglot/": "SQL building (sqlglot)",
    "copy.py": "SQL building (sqlglot)",  # sqlglot's expression copies
    str(ROOT / "api" / "time_limits.py"): "DuckDB queries (run_query)",
    "/duckdb/": "DuckDB queries (run_query)",
    "/redis/": "Redis",
    str(ROOT / "api"): "findata api (own code)",
    str(ROOT / "contracts"): "findata api (own code)",
    "/starlette/": "Starlette / FastAPI",
    "/fastapi/": "Starlette / FastAPI",
    "/pydantic": "pydantic",
    "threading.py": "threads, locks",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, help="default: the small demo in a temp home")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--extra", default="", help="more parameters, e.g. interval=1w")
    parser.add_argument(
        "--database-url", help="a PostgreSQL control plane (postgresql+psycopg://…, migrated here)"
    )
    parser.add_argument("--cache-url", help="redis://… for the response cache and quota counters")
    parser.add_argument(
        "--cached", action="store_true", help="the same URL every time: response-cache hits"
    )
    args = parser.parse_args()
    home, key = prepare_home(args.home, "findata-profile-", args.database_url)
    os.environ["FINDATA_HOME"] = str(home.resolve())
    if args.database_url:
        os.environ["FINDATA_DATABASE_URL"] = args.database_url
    if args.cache_url:
        os.environ["FINDATA_CACHE_URL"] = args.cache_url

    import findata.api.generate as routes
    from findata.api.app import create_app

    profile = cProfile.Profile()
    routes.answer_request = _profiled(profile, routes.answer_request)
    app = create_app()
    with TestClient(app) as client:
        client.headers["X-API-Key"] = key
        status = client.get("/v1/status").json()
        as_of = dt.date.fromisoformat(status["datasets"]["prices"]["data_through"])
        (database,) = (home / "published").glob(f"{status['version']}*.duckdb")
        with open_version(database) as connection:
            listed = connection.sql("SELECT DISTINCT entity_id FROM prices ORDER BY 1")
            ids = [row[0] for row in listed.fetchall()]
        extra = f"&{args.extra}" if args.extra else ""
        urls = [_url(ids, 0 if args.cached else n, as_of) + extra for n in range(args.requests)]
        for url in urls[:50]:  # warm: connections, first loads (and the cached answer)
            client.get(url if args.cached else url + "&w=1")
        PROFILING.set()
        started = time.perf_counter()
        for url in urls:
            response = client.get(url)
            hit = "Age" in response.headers
            assert response.status_code == 200 and hit == args.cached, response.headers
        elapsed = time.perf_counter() - started
        PROFILING.clear()
    print(
        f"{args.requests} requests in {elapsed:.2f} s under the profiler: "
        f"{1000 * elapsed / args.requests:.2f} ms per request"
    )
    stats = pstats.Stats(profile)
    _print_parts(stats, elapsed, args.requests)
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(args.top)
    print(text.getvalue())


PROFILING = threading.Event()


def _profiled(profile: cProfile.Profile, function: Callable[..., T]) -> Callable[..., T]:
    """``function`` run under ``profile`` in whichever thread calls it (one request at a time:
    the test client waits for each answer)."""

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> T:
        if not PROFILING.is_set():
            return function(*args, **kwargs)
        profile.enable()
        try:
            return function(*args, **kwargs)
        finally:
            profile.disable()

    return run


def _url(ids: list[int], n: int, as_of: dt.date) -> str:
    """A new URL per request: the security cycles, the window moves a day at a time."""
    start = as_of - dt.timedelta(days=365 + n // len(ids) % 30)
    end = as_of - dt.timedelta(days=n // (len(ids) * 30) % 30)
    return f"/v1/prices?entity_id={ids[n % len(ids)]}&start={start}&end={end}&limit=5000"


def _print_parts(stats: pstats.Stats, elapsed: float, requests: int) -> None:
    """Own time (``tottime``) summed per part of the stack."""
    by_part: dict[str, float] = defaultdict(float)
    for (filename, _line, _name), (_cc, _nc, tottime, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        part = next((p for marker, p in PARTS.items() if marker in filename), None)
        part = part or ("built-in (C: orjson, sqlite3, …)" if filename == "~" else "other")
        by_part[part] += tottime
    print(f"{'part':<40} {'ms/request':>10} {'share':>6}")
    for part, seconds in sorted(by_part.items(), key=lambda item: -item[1]):
        print(f"{part:<40} {1000 * seconds / requests:>10.2f} {seconds / elapsed:>6.0%}")


if __name__ == "__main__":
    main()
