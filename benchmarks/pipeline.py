"""Benchmark: the refresh pipeline (the real Dagster job) at both demo sizes.

    .venv/bin/python benchmarks/pipeline.py --size small
    .venv/bin/python benchmarks/pipeline.py --size large --home /tmp/findata-large

For each size: generate the demo into a fresh FINDATA_HOME (unless --home already has landing),
then time a full refresh (nothing cached, no previous version), and an incremental refresh
after one more trading day of prices for every security. Each refresh runs in a child process
so its peak memory (max RSS of the process tree's largest member, dbt included) is its own.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

FINDATA = Path(sys.executable).parent / "findata"


def _run(home: Path, *args: str) -> tuple[float, float, str]:
    """Run ``findata *args``; wall seconds, peak RSS (MiB) of any child, last stdout line."""
    env = {**os.environ, "FINDATA_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    started = time.perf_counter()
    result = subprocess.run(
        [str(FINDATA), *args], env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    if result.returncode != 0:
        sys.stderr.write(result.stderr[-3000:])
        raise SystemExit(f"findata {' '.join(args)} failed ({result.returncode})")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    lines = result.stdout.strip().splitlines()
    return wall, peak, lines[-1] if lines else ""


def _add_one_day(landing: Path) -> int:
    """One more session of bars for every security that traded on the last day; rows added."""
    from orchestration.demo.calendar import trading_sessions

    files = sorted((landing / "prices").glob("prices_*.csv"))
    last_file = pd.read_csv(files[-1])
    last_day = last_file["date"].max()
    rows = last_file[last_file["date"] == last_day].copy()
    day = dt.date.fromisoformat(last_day)
    following = trading_sessions(day + dt.timedelta(days=1), day + dt.timedelta(days=10))[0]
    rows["date"] = following.date().isoformat()
    rows["open"] = rows["close"]
    rows.to_csv(landing / "prices" / f"prices_extra_{following:%Y%m%d}.csv", index=False)
    return len(rows)


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=["small", "large"], default="small")
    parser.add_argument("--home", type=Path, help="FINDATA_HOME to use (kept afterwards)")
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix=f"findata-pipeline-{args.size}-"))
    landing = home / "landing"

    if not landing.exists():
        from findata.clock import SystemClock, utc_today
        from orchestration.demo.generate import DEFAULT_SEED, generate_demo

        started = time.perf_counter()
        generate_demo(
            landing,
            home / "demo",
            size=args.size,
            seed=DEFAULT_SEED,
            today=utc_today(SystemClock()),
        )
        print(f"generate {args.size}: {time.perf_counter() - started:.1f} s")

    figures = {}
    wall, peak, version = _run(home, "refresh")
    figures["full refresh"] = (wall, peak, version)
    wall, peak, version = _run(home, "refresh")
    figures["unchanged refresh"] = (wall, peak, version)
    added = _add_one_day(landing)
    wall, peak, version = _run(home, "refresh")
    figures[f"one-day refresh (+{added} bars)"] = (wall, peak, version)

    print(f"size={args.size} home={home}")
    for name, (wall, peak, version) in figures.items():
        print(f"{name:32} {wall:8.1f} s   peak RSS so far {peak:8.0f} MiB   {version}")
    print(
        json.dumps(
            {
                k: {"seconds": round(w, 1), "peak_rss_mib": round(p)}
                for k, (w, p, _) in figures.items()
            }
        )
    )


if __name__ == "__main__":
    main()
