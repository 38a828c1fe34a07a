"""Benchmark: the API against a running server (``findata serve``), over real HTTP.

    .venv/bin/python benchmarks/api.py                       # small demo in a temp home
    .venv/bin/python benchmarks/api.py --home ./.findata --workers 2 --seconds 10

Uses the home's published version (runs ``findata demo --no-serve`` first when there is none),
starts ``findata serve --workers N``, creates a Pro key, and for each request kind runs C
concurrent clients for S seconds: requests per second and p50/p99 latency. Kinds: one ticker,
one year of daily prices (about 250 rows); a 5,000-row page (several tickers, limit=5000); and
``/v1/status`` as the floor of the stack (no key, no data file); the one-ticker request again as
an MCP ``get_prices`` tool call (one POST to ``/mcp``), beside its REST route. Then the cost of
the quota path: the one-ticker request again on a second server started with quotas off
(``FINDATA_QUOTAS_ENABLED=false``), same run, same machine; and the cost of the metrics and
the request log lines: three more servers side by side, one on the defaults (it counts every
request for ``/metrics`` and writes its log line to a file) and two with both off
(``FINDATA_METRICS_ENABLED=false``, ``FINDATA_REQUEST_LOG=false``), the second a control; the
same request measured on each in turn for ``--rounds`` rounds (the order rotated each round);
the throughput lost with both on, and what the same reading gives between the two identical
servers (the noise of this machine in this run). ``--observability-only`` runs that comparison
alone.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from served_homes import FINDATA, free_port, prepare_home, wait_until_answering

Params = dict[str, Any] | Callable[[int], dict[str, Any]]


@dataclass(frozen=True)
class Answer:
    """What one request gave: its body when it succeeded (else the error's code), and whether
    it came from the response cache."""

    body: dict[str, Any] | None
    error: str | None = None
    cached: bool = False


#: one request of a kind: a client and the request's number in, its answer out
Send = Callable[[httpx.Client, int], Answer]


def rest(path: str, params: Params) -> Send:
    """A GET of ``path``. ``params`` may be a function of a request counter (to make every
    request a different one: cache misses)."""

    def send(client: httpx.Client, n: int) -> Answer:
        response = client.get(path, params=params(n) if callable(params) else params)
        if response.status_code != 200:
            return Answer(None, f"{response.status_code} {response.json().get('code')}")
        return Answer(response.json(), cached="Age" in response.headers)

    return send


def mcp_tool(name: str, arguments: Params) -> Send:
    """A ``tools/call`` of the MCP server at ``/mcp`` (stateless: one POST, no session)."""

    def send(client: httpx.Client, n: int) -> Answer:
        call = {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {
                "name": name,
                "arguments": arguments(n) if callable(arguments) else arguments,
            },
        }
        # the revision a client names gets structured results (none named reads as 2025-03-26)
        headers = {
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
        }
        response = client.post("/mcp", json=call, headers=headers)
        # the answer is one server-sent event: its data line is the JSON-RPC response
        data = next(line for line in response.text.splitlines() if line.startswith("data:"))
        result = json.loads(data[5:]).get("result") or {}
        if result.get("isError") or "structuredContent" not in result:
            return Answer(None, str(result.get("content") or data)[:80])
        return Answer(result["structuredContent"])

    return send


#: the first numbers of the requests of a warm-up, of the quotas-off server and of the
#: metrics-and-logs rounds: apart from each other and from the first server's (from 0), so that
#: no measured request was asked before, of this server or of another sharing its (Redis) cache
WARM_UP = 10**7
QUOTAS_OFF = 3 * 10**6  # the MCP kind asks limits from 1,000,000 on
OBSERVABILITY = 4 * 10**6  # one count for all its measures (below WARM_UP for 6 M requests)


def _measure(
    url: str,
    key: str,
    send: Send,
    clients: int,
    seconds: float,
    first: int = 0,
    numbers: Iterator[int] | None = None,
) -> dict:
    """C clients in threads, each with its own connection, for ``seconds``; the requests are
    numbered from ``first`` (a kind whose parameters vary by number asks new ones), or drawn
    from ``numbers``, a count several measures share so that none asks what another asked."""
    latencies: list[float] = []
    cached = [0]
    counter = itertools.count(first) if numbers is None else numbers
    errors: Counter[str] = Counter()
    rows = [0]
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def run() -> None:
        with httpx.Client(base_url=url, headers={"X-API-Key": key}, timeout=60) as client:
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                answer = send(client, next(counter))
                elapsed = time.perf_counter() - started
                with lock:
                    if answer.body is not None:
                        latencies.append(elapsed)
                        cached[0] += answer.cached
                        data = answer.body.get("data")
                        rows[0] = len(data) if isinstance(data, list) else rows[0]
                    else:
                        errors[answer.error or "?"] += 1

    threads = [threading.Thread(target=run) for _ in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "requests": len(ordered),
        "errors": dict(errors),
        "cache_hits": cached[0],
        "rows_per_response": rows[0],
        "requests_per_second": round(len(ordered) / wall, 1),
        "p50_ms": round(statistics.median(ordered) * 1000, 1) if ordered else None,
        "p99_ms": round(ordered[int(len(ordered) * 0.99) - 1] * 1000, 1) if ordered else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument(
        "--rounds", type=int, default=6, help="rounds of the metrics-and-logs comparison"
    )
    parser.add_argument(
        "--observability-only",
        action="store_true",
        help="only the metrics-and-logs comparison (its three servers)",
    )
    args = parser.parse_args()

    home, key = prepare_home(args.home, "findata-api-bench-")
    scenarios = json.loads((home / "demo" / "scenarios.json").read_text())
    if args.observability_only:
        _observability_cost(home, args, key, _one_ticker(scenarios))
        return

    url, server = _serve(home, args.workers)
    try:
        plain = scenarios["plain"]["ticker"]
        classes = scenarios["share_classes"]["class_tickers"]
        others = [scenarios["renamed"]["new_ticker"], scenarios["delisted"]["ticker"]]
        many = ",".join([plain, *classes, *others])
        year = _year_to_as_of(scenarios)
        # a limit above the answer's size (or the page maximum) changes nothing in the rows but
        # makes each request a different one: every such request misses the response cache
        kinds: dict[str, Send] = {
            "status (no key, no data)": rest("/v1/status", {}),
            "prices 1 ticker x 1 year, cached": rest(f"/v1/prices/{plain}", year),
            "prices 1 ticker x 1 year": _one_ticker(scenarios),
            # the same requests as MCP tool calls (get_prices), beside the REST route; limits of
            # their own, so that none is answered from the REST kind's cache entries
            "MCP get_prices 1 ticker x 1 year": mcp_tool(
                "get_prices", lambda n: {"ticker": plain, **year, "limit": 1_000_000 + n}
            ),
            "prices 5,000-row page": rest(f"/v1/prices/{many}", lambda n: {"limit": 5000 + n}),
        }
        print(
            f"server: {args.workers} worker(s); {args.clients} clients; {args.seconds:.0f} s each"
        )
        for name, send in kinds.items():
            _measure(url, key, send, 1, 1.0, WARM_UP)  # warm the version's connection
            figures = _measure(url, key, send, args.clients, args.seconds)
            print(f"{name:34s} {json.dumps(figures)}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    send = kinds["prices 1 ticker x 1 year"]  # every request a cache miss
    url, server = _serve(home, args.workers, quotas=False)
    try:
        _measure(url, key, send, 1, 1.0, WARM_UP)
        # requests of its own: a shared (Redis) cache holds the first server's answers
        figures = _measure(url, key, send, args.clients, args.seconds, QUOTAS_OFF)
        print(f"{'prices 1 ticker x 1 year, quotas off':34s} {json.dumps(figures)}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    _observability_cost(home, args, key, send)


def _year_to_as_of(scenarios: dict[str, Any]) -> dict[str, str]:
    """The query of the year up to the demo's last day."""
    as_of = scenarios["as_of"]
    return {"start": f"{int(as_of[:4]) - 1}{as_of[4:]}", "end": as_of}


def _one_ticker(scenarios: dict[str, Any]) -> Send:
    """One ticker's daily prices over the year to the demo's day, every request a new one (a
    limit above the answer's size changes nothing in the rows): a response-cache miss."""
    year = _year_to_as_of(scenarios)
    return rest(f"/v1/prices/{scenarios['plain']['ticker']}", lambda n: {**year, "limit": 300 + n})


def _observability_cost(home: Path, args: argparse.Namespace, key: str, send: Send) -> None:
    """Metrics and request log lines on against off: three servers started side by side, one
    on the defaults and two with both off (the second a control: what the method reads between
    two servers that differ in nothing), the same request measured on each in turn, round after
    round, each round starting one server later (a drift within a round falls on each in turn);
    every request a new one (a cache miss, in a cache the servers share). Printed: the cost, on
    against the first off server, and the control, the second off server against the first,
    each as the difference of the medians and the median of the rounds' own differences. A
    cost within the control's spread is no cost this machine can tell; the load average is
    printed with them (this run's own clients and servers count in it)."""
    servers = {
        "on": _serve(home, args.workers),
        "off": _serve(home, args.workers, observability=False),
        "off again": _serve(home, args.workers, observability=False),
    }
    numbers = itertools.count(OBSERVABILITY)  # shared: no measure asks what another asked
    rates: dict[str, list[float]] = {name: [] for name in servers}
    unsound: Counter[str] = Counter()  # errors and cache hits: none expected
    load_before = os.getloadavg()[0]
    try:
        # each server's threads and connection pools filled as the measures will use them
        for url, _ in servers.values():
            _measure(url, key, send, args.clients, 2.0, numbers=numbers)
        named = list(servers.items())
        for round_number in range(args.rounds):
            shift = round_number % len(named)
            for name, (url, _) in named[shift:] + named[:shift]:
                figures = _measure(url, key, send, args.clients, args.seconds, numbers=numbers)
                rates[name].append(figures["requests_per_second"])
                unsound.update(_unsound(figures))
    finally:
        for _, server in servers.values():
            server.terminate()
            server.wait(timeout=30)
    print(
        f"{'metrics and logs cost':34s} "
        + json.dumps(
            {
                "on_rps": rates["on"],
                "off_rps": rates["off"],
                "off_again_rps": rates["off again"],
                **_compared("cost", rates["on"], rates["off"]),
                **_compared("control", rates["off again"], rates["off"]),
                "load_1min": [round(load_before, 1), round(os.getloadavg()[0], 1)],
                "errors_or_cache_hits": dict(+unsound),
            }
        )
    )


def _compared(name: str, rates: list[float], reference: list[float]) -> dict[str, Any]:
    """The throughput ``rates`` lose against ``reference`` (percent): of the medians, each
    round's, and the median of the rounds'."""
    by_round = [_cost(rate, ref) for rate, ref in zip(rates, reference, strict=True)]
    return {
        f"{name}_pct": _cost(statistics.median(rates), statistics.median(reference)),
        f"{name}_pct_by_round": by_round,
        f"{name}_pct_median_of_rounds": _median([c for c in by_round if c is not None]),
    }


def _unsound(figures: dict) -> Counter[str]:
    """What a measure of cache misses should not have had: errors, cache hits."""
    return Counter({**figures["errors"], "cache hit": figures["cache_hits"]})


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def _cost(on: float, off: float) -> float | None:
    """The throughput lost with metrics and logs on, in percent of the throughput without."""
    return round((off - on) / off * 100, 1) if off else None


def _serve(
    home: Path, workers: int, *, quotas: bool = True, observability: bool = True
) -> tuple[str, subprocess.Popen[bytes]]:
    """``findata serve`` on a free port, once it answers; its log lines go to a file (as a
    service's go to its journal), so that writing them costs what it costs."""
    port = free_port()
    env = {
        **os.environ,
        "FINDATA_HOME": str(home),
        "FINDATA_QUOTAS_ENABLED": str(quotas).lower(),
        "FINDATA_METRICS_ENABLED": str(observability).lower(),
        "FINDATA_REQUEST_LOG": str(observability).lower(),
    }
    server = subprocess.Popen(
        [str(FINDATA), "serve", "--port", str(port), "--workers", str(workers)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=tempfile.TemporaryFile(),  # noqa: SIM115 (open while the server runs)
    )
    url = f"http://127.0.0.1:{port}"
    if not wait_until_answering(f"{url}/v1/status", server):
        raise SystemExit("findata serve did not start")
    return url, server


if __name__ == "__main__":
    main()
