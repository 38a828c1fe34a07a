"""Benchmark: the refresh pipeline (the real Dagster job) at both demo sizes.

    .venv/bin/python benchmarks/pipeline.py --size small
    .venv/bin/python benchmarks/pipeline.py --size large --home /tmp/findata-large

For each size: generate the demo into a fresh FINDATA_HOME (unless --home already has landing),
hold the last two trading days' bars back, then time a full refresh (nothing cached, no previous
version), an unchanged refresh, and an incremental refresh once the first of those days' bars
land again (as a new file, the way a daily price file arrives); then, with a warm refresh server
(``FINDATA_WARM_REFRESH_IDLE_SECONDS``, started here), an unchanged refresh (it waits for the
server's imports) and the last day's incremental refresh. Each refresh runs in a child process
so its peak memory (max RSS of the process tree's largest member, dbt included) is its own.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

FINDATA = Path(sys.executable).parent / "findata"
WARM_IDLE_SECONDS = 600


def _environment(home: Path, *, warm: bool = False) -> dict[str, str]:
    env = {**os.environ, "FINDATA_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    if warm:
        env["FINDATA_WARM_REFRESH_IDLE_SECONDS"] = str(WARM_IDLE_SECONDS)
    return env


def _run(home: Path, *args: str, warm: bool = False) -> tuple[float, float, str]:
    """Run ``findata *args``; wall seconds, peak RSS (MiB) of any child, last stdout line.
    ``warm``: with the warm refresh server's setting."""
    env = _environment(home, warm=warm)
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


def _start_warm_refresh(home: Path) -> subprocess.Popen[bytes]:
    """The warm refresh server of ``home``, as a child of this process."""
    os.environ.update(_environment(home, warm=True))
    from findata.orchestration.warm_refresh import start_warm_refresh
    from findata.settings import get_settings

    return start_warm_refresh(get_settings(), detached=False)


def _withhold_last_day(landing: Path, held: Path) -> int:
    """Move the last trading day's bars out of landing (into ``held``); rows moved.

    The demo runs to the last session before today and the prices contract refuses future
    dates, so the incremental refresh re-adds the real last day instead of inventing one.
    """
    last_file = sorted((landing / "prices").glob("prices_*.csv"))[-1]
    prices = pd.read_csv(last_file, dtype=str, keep_default_na=False)
    last_day = prices["date"].max()
    prices[prices["date"] != last_day].to_csv(last_file, index=False)
    prices[prices["date"] == last_day].to_csv(held, index=False)
    return int((prices["date"] == last_day).sum())


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
        from findata.demo.generate import DEFAULT_SEED, generate_demo

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
    held = home / "held_back_last_day.csv"
    held_before = home / "held_back_day_before.csv"
    if not held.exists():
        added = _withhold_last_day(landing, held)
        added_before = _withhold_last_day(landing, held_before)
    else:
        added = added_before = 0
    # the control plane's migrations, as an operator runs them before the first refresh
    subprocess.run([str(FINDATA), "db", "upgrade"], env=_environment(home), check=True)
    wall, peak, version = _run(home, "refresh")
    figures["full refresh"] = (wall, peak, version)
    wall, peak, version = _run(home, "refresh")
    figures["unchanged refresh"] = (wall, peak, version)
    held_before.replace(landing / "prices" / "prices_day_before.csv")
    wall, peak, version = _run(home, "refresh")
    figures[f"one-day refresh (+{added_before} bars)"] = (wall, peak, version)

    # the same with a warm refresh server (FINDATA_WARM_REFRESH_IDLE_SECONDS): started here, so
    # that its processes' peak memory is counted once it has ended
    server = _start_warm_refresh(home)
    wall, peak, version = _run(home, "refresh", warm=True)  # waits for the server's imports
    figures["unchanged refresh, warm server"] = (wall, peak, version)
    held.replace(landing / "prices" / "prices_last_day.csv")
    wall, peak, version = _run(home, "refresh", warm=True)
    server.send_signal(signal.SIGTERM)
    server.wait()
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    figures[f"one-day refresh, warm server (+{added} bars)"] = (wall, peak, version)

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
    print("where each run's time went (Dagster's event log; steps under 0.2 s left out):")
    for line in _step_seconds(home):
        print(line)


def _step_seconds(home: Path) -> list[str]:
    """Each refresh run's time from its first event, and its steps' durations."""
    os.environ["DAGSTER_HOME"] = str(home / "dagster")
    import dagster as dg

    lines = []
    with dg.DagsterInstance.get() as instance:
        for run in reversed(instance.get_runs()):
            logs = instance.all_logs(run.run_id)
            first = logs[0].timestamp
            started: dict[str, float] = {}
            steps = []
            for entry in logs:
                kind = entry.dagster_event.event_type_value if entry.dagster_event else None
                if kind == "STEP_START":
                    started[str(entry.step_key)] = entry.timestamp
                elif kind in ("STEP_SUCCESS", "STEP_FAILURE") and entry.step_key in started:
                    seconds = entry.timestamp - started[entry.step_key]
                    if seconds >= 0.2:
                        steps.append(f"{entry.step_key} {seconds:.1f}")
            run_seconds = logs[-1].timestamp - first
            lines.append(f"  run {run.run_id[:8]}: {run_seconds:.1f} s; " + ", ".join(steps))
    return lines


if __name__ == "__main__":
    main()
