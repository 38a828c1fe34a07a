"""Benchmark: a first SEC fetch at the default rate, against the tests' stand-in for EDGAR.

    .venv/bin/python benchmarks/sec_fetch.py [--days 30] [--rate 5]

This project's machines cannot reach the SEC, so the stand-in (``tests/sources/edgar/
edgar_server.py``, on loopback, serving recorded public files and a form index for every
weekday) answers instead: a first fetch of Tesla, Marvell and LTS One over ``--days`` filing days
ending 2021-12-31, into a fresh home, at ``--rate`` requests a second (the default setting's 5).
Prints the requests made (and how many a first load costs by the count the README gives: one per
filing day, two per company, two per Form 4, three per 13F, the company list), the wall time,
and the rate kept. What it cannot show is the SEC's own latency: each request here is answered
in about a millisecond, so the rate alone sets the time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import tempfile
import time
from pathlib import Path

from findata.clock import ManualClock
from findata.settings import Settings
from findata.sources.edgar.fetch import FetchRequest, fetch_sec

# the stand-in for EDGAR lives with the tests, at the project's root
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.sources.edgar.edgar_server import (
    LTS,
    MARVELL,
    TESLA,
    serve_recorded,
    stand_in_environment,
)


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--rate", type=float, default=5)
    args = parser.parse_args()

    until = dt.date(2021, 12, 31)
    since = until - dt.timedelta(days=args.days - 1)
    edgar = serve_recorded(limit_per_second=1000)
    try:
        with tempfile.TemporaryDirectory(prefix="findata-sec-fetch-") as home:
            os.environ.update(stand_in_environment(edgar, Path(home), args.rate))
            settings = Settings()
            request = FetchRequest(since=since, until=until, ciks=frozenset({TESLA, MARVELL, LTS}))
            started = time.perf_counter()
            summary = fetch_sec(
                settings, request, ManualClock(dt.datetime(2022, 1, 3, tzinfo=dt.UTC))
            )
            wall = time.perf_counter() - started
    finally:
        edgar.stop()
    print(f"first fetch, 3 companies, {args.days} days ({since}..{until}), rate {args.rate}/s")
    print(
        f"  requests {summary.requests} (missing {summary.missing}, retries {summary.retries}), "
        f"files landed {summary.files}, {summary.bytes / 1e6:.1f} MB"
    )
    print(f"  wall {wall:.1f} s, {summary.requests / wall:.2f} requests/s kept")
    print(f"  at the rate alone: {summary.requests / args.rate:.1f} s")


if __name__ == "__main__":
    main()
