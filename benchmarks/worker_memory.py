"""Memory of one API worker with its caches full, against the settings that bound them.

    .venv/bin/python benchmarks/worker_memory.py --home H            # H: a home with a demo
    .venv/bin/python benchmarks/worker_memory.py --home H --row-store-mb 64 --served-tables-mb 0

Starts ``findata serve --workers 1`` on the home (the embedded default: SQLite control plane,
the response cache in the worker's memory) and reads the resident size of its process tree
(``/proc``) after start-up, after the first request (the current version opened and its
served tables copied), and after every security's whole price history was asked in three row
shapes (every field, a ``fields=`` subset, ``adjust=split``; 5,000 rows a page) by four clients,
then once more (each time with a new account's key: the large demo's histories, twice, pass
the Redistribution plan's rows an hour): the row store, the response cache and the served
tables are then as full as their budgets let them be. Each stage prints the resident size, and
the last line what the settings allow (row store + response cache + served tables) beside what
the worker grew by.
DuckDB's own working memory (a query's hash tables) is not bounded by these settings.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import tempfile
from pathlib import Path

import httpx
from served_homes import FINDATA, findata_env, free_port, prepare_home, process_tree, rss_mib
from wrk_runs import start_server

from findata.published.versions import open_version

SHAPES = {
    "every field": "",
    "fields=": "&fields=open,high,low,close,adj_close,volume",
    "adjust=split": "&adjust=split",
}
CLIENTS = 4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, help="default: the small demo in a temp home")
    parser.add_argument("--row-store-mb", type=float, default=256.0)
    parser.add_argument("--response-cache-mb", type=float, default=128.0)
    parser.add_argument("--served-tables-mb", type=float, default=512.0)
    args = parser.parse_args()
    home, key = prepare_home(args.home, "findata-memory-")
    env = findata_env(home)
    env.pop("FINDATA_CACHE_URL", None)
    env.update(
        FINDATA_ROW_STORE_MB=str(args.row_store_mb),
        FINDATA_RESPONSE_CACHE_MB=str(args.response_cache_mb),
        FINDATA_SERVED_TABLES_MB=str(args.served_tables_mb),
    )
    port = free_port()
    logs = Path(tempfile.mkdtemp(prefix="findata-memory-logs-"))
    command = [str(FINDATA), "serve", "--port", str(port), "--workers", "1"]
    server = start_server("findata", command, env, port, logs, "/v1/status")
    try:
        pid = server.process.pid
        print(f"home {home}; settings (MB): row store {args.row_store_mb}, response cache "
              f"{args.response_cache_mb}, served tables {args.served_tables_mb}")  # fmt: skip
        started = rss_mib(process_tree(pid))
        print(f"{'started':<44} {started:8.0f} MiB")
        with httpx.Client(base_url=server.url, headers={"X-API-Key": key}, timeout=120) as http:
            version = http.get("/v1/status").json()["version"]
        (database,) = (home / "published").glob(f"{version}*.duckdb")
        with open_version(database) as connection:
            ids = [row[0] for row in connection.sql(
                "SELECT DISTINCT entity_id FROM prices ORDER BY 1").fetchall()]  # fmt: skip
        _ask(server.url, key, [f"/v1/prices?entity_id={ids[0]}&limit=1"])
        opened = rss_mib(process_tree(pid))
        print(f"{'version opened (served tables copied)':<44} {opened:8.0f} MiB")
        paths = [
            f"/v1/prices?entity_id={entity}&start=1900-01-01&limit=5000{extra}"
            for extra in SHAPES.values()
            for entity in ids
        ]
        for rounds in ("once", "twice"):
            # a new account each time: two rounds of the large demo pass a plan's rows an hour
            _, round_key = prepare_home(home, "findata-memory-")
            _ask(server.url, round_key, paths)
            label = f"{len(ids)} securities x {len(SHAPES)} shapes, {rounds}"
            print(f"{label:<44} {rss_mib(process_tree(pid)):8.0f} MiB")
        full = rss_mib(process_tree(pid))
        budget = args.row_store_mb + args.response_cache_mb + args.served_tables_mb
        print(
            f"grew {full - started:.0f} MiB from start; the settings allow {budget:.0f} MB "
            f"(row store + response cache + served tables)"
        )
    finally:
        server.stop()


def _ask(url: str, key: str, paths: list[str]) -> None:
    """Every path asked once by ``CLIENTS`` clients (a refused answer stops the run)."""

    def asked(chunk: list[str]) -> None:
        with httpx.Client(base_url=url, headers={"X-API-Key": key}, timeout=120) as http:
            for path in chunk:
                response = http.get(path)
                if response.status_code != 200:
                    raise SystemExit(f"{path}: {response.status_code} {response.text[:300]}")

    chunks = [paths[n::CLIENTS] for n in range(CLIENTS)]
    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        list(pool.map(asked, chunks))


if __name__ == "__main__":
    main()
