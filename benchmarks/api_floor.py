"""Benchmark: ``findata serve`` against the bare floor (Starlette + DuckDB + orjson), side by side.

    .venv/bin/python benchmarks/api_floor.py                    # small demo in a temp home
    .venv/bin/python benchmarks/api_floor.py --home H --seconds 10 --rounds 3 --connections 16

Reproduces the table of issue 17 in one command. Uses the home's published version (runs
``findata demo --no-serve`` first when there is none) and starts, each pinned to core 0
(``taskset -c 0``), one uvicorn worker each:

- the floor, ``benchmarks/floor_server.py``: ``/v1/prices?entity_id=&start=&end=&limit=&fields=``
  on the published ``prices`` rows copied into a native DuckDB table sorted by (entity_id, date)
  (the layout a bare server would choose, not the version's Parquet parts), no key, no quota, no
  cache;
- ``findata serve --workers 1`` (SQLite control plane, the embedded default; or the
  ``--database-url`` and ``--cache-url`` given), asked with a Redistribution key
  (``findata keys create``) in ``X-API-Key``.

The load generator is wrk (Debian's ``wrk``, installed here with apt-get when missing and
running as root), pinned to core 1, with a Lua script that makes a new URL for every request:
the security cycles through every ``entity_id`` of ``prices`` and the window moves by a day at a
time, so that findata's response cache never answers (the script counts answers that carry
``Age``, the mark of a cached one, and every non-2xx status). Workloads, on both servers with
``limit=5000`` (one page):

- one security, last year: ``start`` = as_of - 1 year - s days, ``end`` = as_of - e days,
  s and e in 0..29 (up to about 251 rows; fewer for securities listed or delisted meanwhile);
- full history: no ``start``, ``end`` from 6 days before as_of to years after it (every row of
  the security: up to 1,272 on the small demo);
- ``--fields a,b``: every URL of both workloads names those fields (``fields=``); ``--adjust
  split``: every URL asks for prices restated in today's shares (``adjust=split``);
- with ``--cached`` (the default): findata asked the same URL over and over (cache hits), each
  workload's, against the floor's uncached figure.

Before measuring, a sample of URLs of both workloads is asked of both servers: the floor's
``data`` must equal findata's exactly (rows, values, field order), or the run stops. Then
``--rounds`` alternating rounds (floor, findata, findata cached; per workload) of ``--seconds``
each (after an unrecorded ``--warmup``); the table gives the medians of the rounds, findata's
requests per second over the floor's, p50 and p99 latencies, and each workload's mean and most
rows per answer. Every process started here is stopped at the end, on Ctrl-C too.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
from served_homes import FINDATA, findata_env, free_port, prepare_home
from wrk_runs import (
    LUA_DONE,
    RESULT_MARK,
    Run,
    Server,
    ensure_wrk,
    pinned,
    run_wrk,
    servers_stopped_at_exit,
    start_server,
)

from findata.published.versions import open_version

FLOOR_SERVER = Path(__file__).with_name("floor_server.py")
LIMIT = 5000  # one page carries a security's full history, on both servers
YEAR_SHIFTS = 30  # last year: start and end each move back by 0..29 days
FULL_SHIFTS = 900  # full history: end moves from 6 days before as_of to years after it
FULL_FIRST_SHIFT = -6
WORKLOADS = {"year": "one security, last year", "full": "full history"}

LUA = (
    r"""
-- api_floor.py: a new URL for every request (no response-cache hit possible)
local ids = {%(ids)s}
local starts = {%(starts)s}
local year_ends = {%(year_ends)s}
local full_ends = {%(full_ends)s}
local year_shifts, full_shifts, limit = %(year_shifts)d, %(full_shifts)d, %(limit)d
local suffix = "%(suffix)s"
local space = #ids * #starts * #year_ends
if #ids * #full_ends < space then space = #ids * #full_ends end
local threads = {}

function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

function init(args)
  mode, base, nthreads, key = args[1], tonumber(args[2]), tonumber(args[3]), args[4]
  sent, non2xx, hits, statuses = 0, 0, 0, {}
  headers = {}
  if key ~= "" then headers["X-API-Key"] = key end
end

-- the path of request number n (api_floor.py's path_of does the same)
function path_of(n)
  n = n %% space
  local id = ids[n %% #ids + 1]
  local k = math.floor(n / #ids)
  if mode == "year" or mode == "year-cached" then
    local e, s = k %% year_shifts, math.floor(k / year_shifts) %% year_shifts
    if mode == "year-cached" then e, s = 0, 0; id = ids[1] end
    return "/v1/prices?entity_id=" .. id .. "&start=" .. starts[s + 1] ..
      "&end=" .. year_ends[e + 1] .. "&limit=" .. limit .. suffix
  end
  local e = k %% full_shifts
  if mode == "full-cached" then e = %(full_cached_shift)d; id = ids[1] end
  return "/v1/prices?entity_id=" .. id .. "&end=" .. full_ends[e + 1] .. "&limit=" .. limit ..
    suffix
end

function request()
  local n = base + tid + nthreads * sent
  sent = sent + 1
  return wrk.format("GET", path_of(n), headers)
end

function response(status, response_headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
    statuses[status] = (statuses[status] or 0) + 1
  end
  if response_headers["age"] or response_headers["Age"] then hits = hits + 1 end
end

"""
    + LUA_DONE
)


@dataclass(frozen=True)
class Urls:
    """The URLs of the workloads (the Lua script makes the same ones, number for number)."""

    ids: list[int]
    starts: list[str]
    year_ends: list[str]
    full_ends: list[str]
    #: what every URL ends with: ``&fields=…``, ``&adjust=…`` when asked for, else nothing
    suffix: str = ""

    @classmethod
    def of(
        cls, ids: list[int], as_of: dt.date, fields: str | None = None, adjust: str | None = None
    ) -> Urls:
        """The windows around ``as_of``, the last day of the published prices."""
        try:
            year_ago = as_of.replace(year=as_of.year - 1)
        except ValueError:  # 29 February
            year_ago = as_of.replace(year=as_of.year - 1, day=28)
        day = dt.timedelta(days=1)
        return cls(
            ids=ids,
            starts=[(year_ago - s * day).isoformat() for s in range(YEAR_SHIFTS)],
            year_ends=[(as_of - e * day).isoformat() for e in range(YEAR_SHIFTS)],
            full_ends=[
                (as_of + (FULL_FIRST_SHIFT + e) * day).isoformat() for e in range(FULL_SHIFTS)
            ],
            suffix=(f"&fields={fields}" if fields else "")
            + (f"&adjust={adjust}" if adjust else ""),
        )

    @property
    def space(self) -> int:
        """How many different URLs each workload has."""
        return len(self.ids) * min(len(self.starts) * len(self.year_ends), len(self.full_ends))

    def path_of(self, mode: str, n: int) -> str:
        """The path of request number ``n`` (``path_of`` of the Lua script)."""
        n %= self.space
        entity, k = self.ids[n % len(self.ids)], n // len(self.ids)
        if mode.startswith("year"):
            e, s = k % YEAR_SHIFTS, (k // YEAR_SHIFTS) % YEAR_SHIFTS
            if mode == "year-cached":
                e, s, entity = 0, 0, self.ids[0]
            return (
                f"/v1/prices?entity_id={entity}&start={self.starts[s]}"
                f"&end={self.year_ends[e]}&limit={LIMIT}{self.suffix}"
            )
        e = k % FULL_SHIFTS
        if mode == "full-cached":
            e, entity = -FULL_FIRST_SHIFT, self.ids[0]
        return f"/v1/prices?entity_id={entity}&end={self.full_ends[e]}&limit={LIMIT}{self.suffix}"

    def lua(self) -> str:
        """The wrk script."""

        def quoted(values: list[str]) -> str:
            return ", ".join(f'"{value}"' for value in values)

        return LUA % {
            "ids": ", ".join(str(i) for i in self.ids),
            "starts": quoted(self.starts),
            "year_ends": quoted(self.year_ends),
            "full_ends": quoted(self.full_ends),
            "year_shifts": YEAR_SHIFTS,
            "full_shifts": FULL_SHIFTS,
            "full_cached_shift": -FULL_FIRST_SHIFT,
            "limit": LIMIT,
            "suffix": self.suffix,
            "mark": RESULT_MARK,
        }


def check_honesty(urls: Urls, floor: Server, findata: Server, key: str, samples: int) -> dict:
    """Ask both servers a sample of each workload's URLs: the floor's ``data`` must be findata's,
    byte for byte once re-serialised (rows, values, field order). Returns rows per answer."""
    rows: dict[str, list[int]] = {mode: [] for mode in WORKLOADS}
    step = max(1, urls.space // (samples * 7 + 1)) | 1  # odd: walks securities and windows
    with httpx.Client(timeout=60) as client:
        for mode in WORKLOADS:
            for i in range(samples):
                path = urls.path_of(mode, urls.space - 1 - i * step)  # far from wrk's numbers
                ours = client.get(findata.url + path, headers={"X-API-Key": key})
                theirs = client.get(floor.url + path)
                if ours.status_code != 200 or theirs.status_code != 200:
                    raise SystemExit(
                        f"honesty check: {path}: findata {ours.status_code} "
                        f"{ours.text[:300]}; floor {theirs.status_code} {theirs.text[:300]}"
                    )
                expected, got = ours.json()["data"], theirs.json()["data"]
                if orjson.dumps(expected) != orjson.dumps(got):
                    raise SystemExit(
                        f"honesty check failed on {path}: the floor answers {len(got)} rows, "
                        f"findata {len(expected)}; first differing row:\n"
                        + next(
                            (
                                f"findata {a}\nfloor   {b}"
                                for a, b in zip(expected, got, strict=False)
                                if orjson.dumps(a) != orjson.dumps(b)
                            ),
                            "(a prefix of the other)",
                        )
                    )
                rows[mode].append(len(expected))
    return rows


Results = dict[tuple[str, str], list[Run]]  # (server, workload): one run per round


def _median(runs: list[Run], attribute: str) -> float:
    return statistics.median(getattr(run, attribute) for run in runs)


def rows_per_answer(database: Path, urls: Urls) -> dict[str, tuple[float, int]]:
    """Mean and most rows of one answer of each workload over every security (the windows
    without their shifts), from the published ``prices``."""
    counted = """
        SELECT avg(n), max(n) FROM (
            SELECT e.entity_id, count(p.date) AS n
            FROM (SELECT DISTINCT entity_id FROM prices) e
            LEFT JOIN prices p
                ON p.entity_id = e.entity_id AND p.date BETWEEN $start AND $end
            GROUP BY e.entity_id)
    """
    windows = {"year": (urls.starts[0], urls.year_ends[0]), "full": ("0001-01-01", "9999-12-31")}
    with open_version(database) as connection:
        return {
            mode: connection.execute(
                counted, {"start": dt.date.fromisoformat(a), "end": dt.date.fromisoformat(b)}
            ).fetchone()
            for mode, (a, b) in windows.items()
        }


def table(results: Results, rows: dict[str, tuple[float, int]], cached: bool, setup: str) -> str:
    """The Markdown table: medians of the rounds, findata's requests/s over the floor's;
    ``setup`` says findata's control plane and counters."""
    head, rule = "| server |", "|---|"
    for mode, label in WORKLOADS.items():
        mean, most = rows[mode]
        head += f" {label} (mean {mean:,.0f} rows, max {most:,}) req/s | ratio | p50 ms | p99 ms |"
        rule += "---|---|---|---|"
    servers = [
        ("floor", "bare floor: Starlette + DuckDB + orjson, no auth"),
        ("findata", f"findata `findata serve` (1 worker, {setup}, Redistribution key)"),
    ]
    if cached:
        servers.append(("findata-cached", "findata, cache hits (the same URL every request)"))
    lines = [head, rule]
    for name, label in servers:
        line = f"| {label} |"
        for mode in WORKLOADS:
            runs = results[(name, mode)]
            per_second = _median(runs, "per_second")
            floor = _median(results[("floor", mode)], "per_second")
            line += (
                f" {per_second:,.0f} | {per_second / floor:.2f} | "
                f"{_median(runs, 'p50_ms'):,.1f} | {_median(runs, 'p99_ms'):,.0f} |"
            )
        lines.append(line)
    return "\n".join(lines)


def report_problems(results: Results) -> None:
    """Say loudly when a server refused requests (a 429 is findata's quota) or answered a
    request meant to miss the cache from it, or when connections failed."""
    for (name, mode), runs in results.items():
        where = f"{name}, {WORKLOADS[mode]}"
        statuses: dict[str, int] = {}
        for run in runs:
            for status, n in run.statuses.items():
                statuses[status] = statuses.get(status, 0) + n
        non2xx = sum(run.non2xx for run in runs)
        if non2xx:
            quota = ""
            if "429" in statuses:
                quota = "\nQUOTA REFUSALS (429): these figures are not findata's answers"
            banner = "!" * 78
            print(f"\n{banner}\n{where}: {non2xx} non-2xx answers {statuses}{quota}\n{banner}")
        hits = sum(run.cache_hits for run in runs)
        if hits and not name.endswith("cached"):
            print(f"\nwarning: {where}: {hits} answers came from the response cache")
        errors = sum(run.socket_errors + run.timeouts for run in runs)
        if errors:
            print(f"\nwarning: {where}: {errors} socket errors or timeouts")


def parse_arguments() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, default=None, help="a findata home (written to)")
    parser.add_argument("--seconds", type=float, default=10.0, help="per run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds per server, unrecorded")
    parser.add_argument("--samples", type=int, default=20, help="honesty check URLs per workload")
    parser.add_argument(
        "--cached",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also measure findata's cache hits (default: on)",
    )
    parser.add_argument(
        "--database-url",
        help="findata's control plane (e.g. postgresql+psycopg://…/db, created beforehand); "
        "default: SQLite under the home",
    )
    parser.add_argument(
        "--cache-url", help="redis://…: findata's response cache and quota counters in Redis"
    )
    parser.add_argument(
        "--fields",
        help="a field list every request asks for (e.g. open,high,low,close,adj_close,volume); "
        "default: none (every field)",
    )
    parser.add_argument(
        "--adjust", choices=["split"], help="every request asks adjust=split (default: as traded)"
    )
    parser.add_argument("--server-core", type=int, default=0)
    parser.add_argument("--wrk-core", type=int, default=1)
    args = parser.parse_args()
    cores = os.sched_getaffinity(0)
    if not {args.server_core, args.wrk_core} <= cores or args.server_core == args.wrk_core:
        print(f"cores {sorted(cores)}: not pinning (needs two distinct cores)", file=sys.stderr)
        args.server_core = args.wrk_core = None
    return args


def measure(
    args: argparse.Namespace,
    wrk: str,
    script: Path,
    space: int,
    floor: Server,
    findata: Server,
    key: str,
) -> Results:
    """A warm-up of each server and workload, then alternating rounds; one line per run."""
    bases = {mode: 0 for mode in WORKLOADS}  # each run's requests follow the previous run's
    if args.warmup > 0:
        for mode in WORKLOADS:
            for server, server_key in ((floor, ""), (findata, key)):
                warmup = run_wrk(
                    wrk, script, server, mode, bases[mode], server_key, args, warmup=True
                )
                bases[mode] = warmup.next_base
    plan: list[tuple[str, Server, str, str]] = []
    for mode in WORKLOADS:
        plan += [("floor", floor, mode, ""), ("findata", findata, mode, key)]
        if args.cached:
            plan.append(("findata-cached", findata, f"{mode}-cached", key))
    results: Results = {}
    for round_number in range(1, args.rounds + 1):
        for name, server, mode, server_key in plan:
            workload = mode.removesuffix("-cached")
            run = run_wrk(wrk, script, server, mode, bases[workload], server_key, args)
            if mode == workload:
                bases[workload] = run.next_base
            results.setdefault((name, workload), []).append(run)
            print(
                f"round {round_number} {name:15s} {WORKLOADS[workload]:24s} "
                f"{run.per_second:8.1f} req/s  p50 {run.p50_ms:8.1f} ms  "
                f"p99 {run.p99_ms:8.1f} ms  non-2xx {run.non2xx}  cache hits {run.cache_hits}"
                + (f"  statuses {run.statuses}" if run.statuses else "")
                + (f"  socket errors {run.socket_errors}" if run.socket_errors else ""),
                flush=True,
            )
    if max(bases.values()) > space:
        print("note: more requests than URLs in a workload: some URLs repeated", file=sys.stderr)
    return results


def main() -> None:
    """Set up, check the floor's honesty, measure, print the table; stop every server."""
    args = parse_arguments()
    wrk = ensure_wrk()
    home, key = prepare_home(args.home, "findata-floor-bench-", args.database_url)
    logs = Path(tempfile.mkdtemp(prefix="findata-floor-logs-"))
    script = logs / "new_url_every_request.lua"
    env = findata_env(home, args.database_url)
    if args.cache_url:
        env["FINDATA_CACHE_URL"] = args.cache_url

    servers: list[Server] = []
    with servers_stopped_at_exit(servers):
        port = free_port()
        command = [str(FINDATA), "serve", "--port", str(port), "--workers", "1"]
        findata = start_server(
            "findata", pinned(args.server_core, command), env, port, logs, "/v1/status"
        )
        servers.append(findata)
        status = httpx.get(findata.url + "/v1/status", timeout=30).json()
        label = status["version"]
        as_of = dt.date.fromisoformat(status["datasets"]["prices"]["data_through"])
        (database,) = (home / "published").glob(f"{label}*.duckdb")
        with open_version(database) as connection:  # every security
            listed = connection.sql("SELECT DISTINCT entity_id FROM prices ORDER BY 1")
            urls = Urls.of([row[0] for row in listed.fetchall()], as_of, args.fields, args.adjust)
        script.write_text(textwrap.dedent(urls.lua()))

        port = free_port()
        command = [sys.executable, str(FLOOR_SERVER), "--db", str(database), "--port", str(port)]
        probe = f"/v1/prices?entity_id={urls.ids[0]}&limit=1"
        floor = start_server("floor", pinned(args.server_core, command), env, port, logs, probe)
        servers.append(floor)

        sampled = check_honesty(urls, floor, findata, key, args.samples)
        print(
            f"home {home}, version {label}, prices through {as_of}, {len(urls.ids)} securities\n"
            "honesty check passed (the floor's data equal to findata's): "
            + "; ".join(
                f"{WORKLOADS[mode]}: {len(n)} URLs, {min(n)}–{max(n)} rows"
                for mode, n in sampled.items()
            )
        )
        pinning = (
            f"servers on core {args.server_core}, wrk on core {args.wrk_core}"
            if args.server_core is not None
            else "no pinning"
        )
        print(
            f"wrk: {args.threads} threads, {args.connections} connections, {args.seconds:g} s "
            f"per run, {args.rounds} alternating rounds, {pinning}; logs in {logs}",
            flush=True,
        )
        results = measure(args, wrk, script, urls.space, floor, findata, key)

    print()
    setup = "PostgreSQL control plane" if args.database_url else "SQLite control plane"
    setup += ", Redis cache and quota counters" if args.cache_url else ", counters in memory"
    if args.database_url and not args.cache_url:
        setup = "PostgreSQL control plane, counters in the database"
    print(
        f"fields: {args.fields or 'every field (none named)'}; "
        f"adjust: {args.adjust or 'none (as traded)'}"
    )
    print(table(results, rows_per_answer(database, urls), args.cached, setup))
    report_problems(results)
    print(
        f"\nMedians of {args.rounds} rounds of {args.seconds:g} s, {args.connections} "
        "connections, a new URL every request (but on the cache-hit row); ratio: requests/s "
        "over the floor's on the same workload (cache hits: over the floor's uncached)."
    )


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        raise SystemExit("interrupted: every server started here is stopped") from None
