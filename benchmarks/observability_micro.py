"""Benchmark: what counting a request and logging its line cost a worker, in-process.

    .venv/bin/python benchmarks/observability_micro.py            # text lines
    .venv/bin/python benchmarks/observability_micro.py --json     # FINDATA_LOG_FORMAT=json

Configures this process as ``findata serve`` configures each worker (prometheus-client in
multiprocess mode in an empty folder, the logging of ``api/serve.py``, stderr a line-buffered
file), then calls what a worker runs once a request is answered, ``FrontDoor._answered`` (its
counts and its log line), and one response-cache lookup, N times; the best of R repeats.
Prints the CPU time per request of the calling thread (a request's event loop) and of the whole
process (the log writer's thread included, every line written). Unlike ``benchmarks/api.py``
(throughput over HTTP, on vs off), the figures hardly move with other work on the machine.
"""

from __future__ import annotations

import argparse
import logging
import logging.config
import os
import shutil
import sys
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="JSON log lines")
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    # before prometheus_client is imported, as api/serve.py does for a worker
    metrics_dir = tempfile.mkdtemp(prefix="findata-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    lines = tempfile.NamedTemporaryFile("w", buffering=1, suffix=".log", delete=False)  # noqa: SIM115
    sys.stderr = lines  # where a worker's lines go (its journal, a file)
    try:
        _measure(args, lines.name)
    finally:
        sys.stderr = sys.__stderr__  # a failure's traceback to the terminal
        os.unlink(lines.name)
        shutil.rmtree(metrics_dir, ignore_errors=True)


def _measure(args: argparse.Namespace, lines: str) -> None:
    from starlette.routing import Route

    from findata.api.front_door import FrontDoor
    from findata.api.prometheus import ApiMetrics
    from findata.logs import logging_config, skip_unused_record_fields

    log_format = "json" if args.json else "text"
    logging.config.dictConfig(logging_config(log_format, background=True))
    skip_unused_record_fields()
    route = Route("/v1/prices/{tickers}", endpoint=lambda _request: None)
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/v1/prices/AAA",
        "route": route,
        "state": {"account_id": "acct_3f0c9a1e2b7d4c5a"},
    }
    metrics = ApiMetrics()
    front_door = FrontDoor(lambda *_: None, metrics=metrics, request_log=True)  # type: ignore[arg-type]

    def requests() -> None:
        for _ in range(args.requests):
            front_door._answered(scope, 200, 0.0123)
            metrics.cache_looked_up(False)

    def write_waiting() -> None:
        for handler in logging.getLogger().handlers:
            handler.flush()

    requests()  # the series made, the writer thread started
    thread_best = process_best = float("inf")
    for _ in range(args.repeats):
        write_waiting()
        thread_started, process_started = time.thread_time(), time.process_time()
        requests()
        thread_spent = time.thread_time() - thread_started
        write_waiting()
        process_spent = time.process_time() - process_started
        thread_best = min(thread_best, thread_spent / args.requests)
        process_best = min(process_best, process_spent / args.requests)
    with open(lines, encoding="utf-8") as written_lines:
        written = sum(1 for _ in written_lines)
    expected = args.requests * (args.repeats + 1)
    sys.stdout.write(
        f"{log_format} lines: {thread_best * 1e6:.1f} µs per request on the calling thread, "
        f"{process_best * 1e6:.1f} µs in the whole process ({written} lines written of "
        f"{expected})\n"
    )


if __name__ == "__main__":
    main()
