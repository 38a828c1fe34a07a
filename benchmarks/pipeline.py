"""Benchmark: the refresh pipeline (the real Dagster job) at both demo sizes.

    .venv/bin/python benchmarks/pipeline.py --size small
    .venv/bin/python benchmarks/pipeline.py --size large --home /tmp/findata-large
    .venv/bin/python benchmarks/pipeline.py --size small --reference ../before/.venv/bin/findata

For each size: generate the demo into a fresh FINDATA_HOME (unless --home already has landing),
hold the last two trading days' bars back, then time a full refresh (nothing cached, no previous
version), an unchanged refresh, and an incremental refresh once the first of those days' bars
land again (as a new file, the way a daily price file arrives), then the second's. Each refresh
is a ``findata refresh`` process of its own, on the default settings; its peak memory is the
largest resident size of any process of its tree (dbt included).

``--reference`` names another installation's ``findata`` (a checkout of the previous version
with its own venv): the same steps run on a copy of the same landing with it, each step right
after this checkout's, so that both see the machine's load alike.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

FINDATA = Path(sys.executable).parent / "findata"
#: runs a command and prints the largest resident size (KiB) of any process of its tree
PEAK_RSS = (
    "import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
    "sys.exit(code)"
)


def _environment(home: Path) -> dict[str, str]:
    return {**os.environ, "FINDATA_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}


def _run(findata: Path, home: Path, *args: str) -> tuple[float, float, str]:
    """Run ``findata *args``; wall seconds, peak RSS (MiB) of its process tree, last stdout
    line."""
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, str(findata), *args],
        env=_environment(home),
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if result.returncode != 0:
        sys.stderr.write(result.stderr[-3000:])
        raise SystemExit(f"{findata} {' '.join(args)} failed ({result.returncode})")
    peak = int(result.stderr.strip().splitlines()[-1]) / 1024
    lines = result.stdout.strip().splitlines()
    return wall, peak, lines[-1] if lines else ""


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


def _refresh_steps(homes: dict[str, tuple[Path, Path]], held: dict[str, Path]) -> dict:
    """The refreshes, each installation's right after the other's: figures per step and
    installation."""
    figures: dict[str, dict[str, tuple[float, float, str]]] = {}
    for findata, home in homes.values():
        # the control plane's migrations, as an operator runs them before the first refresh
        subprocess.run([str(findata), "db", "upgrade"], env=_environment(home), check=True)
    steps = [
        ("full refresh", None),
        ("unchanged refresh", None),
        ("one-day refresh", "day_before"),
        ("second one-day refresh", "last_day"),
    ]
    for step, lands in steps:
        for name, (findata, home) in homes.items():
            if lands is not None:
                shutil.copy(held[lands], home / "landing" / "prices" / f"prices_{lands}.csv")
            figures.setdefault(step, {})[name] = _run(findata, home, "refresh")
    return figures


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=["small", "large"], default="small")
    parser.add_argument("--home", type=Path, help="FINDATA_HOME to use (kept afterwards)")
    parser.add_argument("--reference", type=Path, help="another installation's findata")
    parser.add_argument("--step-seconds", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step_seconds:
        print("\n".join(_step_seconds(args.step_seconds)))
        return
    home = args.home or Path(tempfile.mkdtemp(prefix=f"findata-pipeline-{args.size}-"))
    source = home / "source"
    if not (source / "landing").exists():
        from findata.clock import SystemClock, utc_today
        from findata.demo.generate import DEFAULT_SEED, generate_demo

        started = time.perf_counter()
        generate_demo(
            source / "landing",
            source / "demo",
            size=args.size,
            seed=DEFAULT_SEED,
            today=utc_today(SystemClock()),
        )
        print(f"generate {args.size}: {time.perf_counter() - started:.1f} s")
        held = {
            "last_day": _withhold_last_day(source / "landing", source / "held_last_day.csv"),
            "day_before": _withhold_last_day(source / "landing", source / "held_day_before.csv"),
        }
        print(f"held back: {held}")
    held_files = {k: source / f"held_{k}.csv" for k in ("last_day", "day_before")}
    installations = {"this": FINDATA, **({"reference": args.reference} if args.reference else {})}
    homes = {}
    for name, findata in installations.items():
        run_home = home / name
        shutil.rmtree(run_home, ignore_errors=True)
        shutil.copytree(source / "landing", run_home / "landing")
        homes[name] = (findata, run_home)
    figures = _refresh_steps(homes, held_files)

    print(f"size={args.size} home={home}")
    for step, by_name in figures.items():
        for name, (wall, peak, version) in by_name.items():
            print(f"{step:24} {name:9} {wall:8.1f} s   peak RSS {peak:8.0f} MiB   {version}")
    print(
        json.dumps(
            {
                step: {
                    name: {"seconds": round(w, 1), "peak_rss_mib": round(p)}
                    for name, (w, p, _) in by_name.items()
                }
                for step, by_name in figures.items()
            }
        )
    )
    for name, (findata, run_home) in homes.items():
        print(f"where each run's time went, {name} (Dagster's event log; steps under 0.2 s out):")
        # read by the installation's own Python: its instance may name storage only it has
        python = findata.parent / "python"
        subprocess.run([str(python), __file__, "--step-seconds", str(run_home)], check=True)


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
