"""Benchmark: generate the demo universe, then read all of landing back with the readers.

    .venv/bin/python benchmarks/demo_generate.py --size small
    .venv/bin/python benchmarks/demo_generate.py --size large --keep /tmp/findata-large
    .venv/bin/python benchmarks/demo_generate.py --size large --skip-read --today 2026-11-25

Prints wall-clock seconds, peak memory, files and bytes written, and rows read per table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import resource
import shutil
import tempfile
import time
from pathlib import Path

from findata.clock import SystemClock, utc_today
from findata.demo.generate import DEFAULT_SEED, generate_demo
from findata.sources.landing import read_all_landing


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=["small", "large"], default="small")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--keep", type=Path, help="generate here and keep the files")
    parser.add_argument("--skip-read", action="store_true", help="only time the generation")
    parser.add_argument(
        "--today",
        type=dt.date.fromisoformat,
        help="generate as on this day, YYYY-MM-DD (default: today, UTC), to compare runs",
    )
    args = parser.parse_args()

    home = args.keep or Path(tempfile.mkdtemp(prefix="findata-bench-"))
    landing = home / "landing"
    if landing.exists():
        shutil.rmtree(landing)
    today = args.today or utc_today(SystemClock())
    started = time.perf_counter()
    result = generate_demo(landing, home / "demo", size=args.size, seed=args.seed, today=today)
    generated = time.perf_counter() - started
    files = [p for p in landing.rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in files)
    print(f"size={args.size} seed={args.seed} today={today} as_of={result.as_of}")
    print(
        f"generate: {generated:.1f} s, {len(files)} files, {size / 2**20:.1f} MiB, "
        f"peak RSS {_peak_rss_mib():.0f} MiB"
    )
    if not args.skip_read:
        started = time.perf_counter()
        summary = read_all_landing(landing).summary()
        read = time.perf_counter() - started
        rows = sum(summary["rows"].values())
        print(f"read back: {read:.1f} s, {rows:,} rows, peak RSS {_peak_rss_mib():.0f} MiB")
        for table, count in summary["rows"].items():
            print(f"  {table:18} {count:>12,}")
    if args.keep is None:
        shutil.rmtree(home)
    print(f"finished {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M:%S} UTC")


if __name__ == "__main__":
    main()
