"""The contract checks' worker processes (``orchestration/checks/workers.py``): the same outcomes
as a check in this process, in order, on this process's clock; errors and a dead helper. Then
the same from a warm checks server (``orchestration/checks/warm_checks.py``), which a warm
refresh's checks go to instead of a helper of their own."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import duckdb
import psutil
import pytest

from findata.clock import ManualClock, set_clock
from findata.contracts.datasets import load_dataset_contract
from findata.orchestration.checks import warm_checks, workers
from findata.orchestration.checks.warehouse import contracted_marts
from findata.orchestration.checks.workers import (
    MartCheck,
    MartCheckOutcome,
    check_against_version,
    check_marts,
    stop_check_workers,
)

NOW = dt.datetime(2026, 3, 9, 15, 30, tzinfo=dt.UTC)


@pytest.fixture
def manual_clock() -> Iterator[ManualClock]:
    clock = ManualClock(NOW)
    previous = set_clock(clock)
    yield clock
    set_clock(previous)


def _jobs(warehouse: Path, today: dt.date) -> list[MartCheck]:
    """A check of every mart of ``warehouse`` with a contract, no version to compare with."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        marts = contracted_marts(con, "marts")
    return [
        MartCheck(load_dataset_contract(name), warehouse, "marts", None, None, today)
        for name in marts
    ]


def _checked(outcome: MartCheckOutcome) -> tuple[Any, ...]:
    """What a check found: its verdict, rows, method, failures, and each expectation's result
    (the validation's ids and load times aside)."""
    result = outcome.result
    assert result is not None
    return (
        result.dataset,
        result.success,
        result.row_count,
        result.method,
        result.failures,
        [
            (r["expectation_config"]["type"], r["success"], r["result"])
            for r in result.validation["results"]
        ],
        result.validation["meta"]["run_id"],
    )


@pytest.fixture(params=["own helper", "warm checks server"])
def checked_by(request: pytest.FixtureRequest) -> Iterator[str]:
    """Where this process's batches are checked: its own helper, or a warm checks server (and
    then no helper of its own)."""
    if request.param == "warm checks server":
        stop_check_workers()
        warm_checks.start_warm_checks()
    yield request.param
    warm_checks.stop_warm_checks()
    assert (workers._helper is None) == (request.param == "warm checks server")


def test_the_workers_check_every_mart_as_this_process_does_in_order(
    checked_by: str, small_warehouse: Path, demo_today: dt.date, manual_clock: ManualClock
) -> None:
    jobs = _jobs(small_warehouse, demo_today)
    assert len(jobs) >= 10
    outcomes = check_marts(jobs)
    here = [check_against_version(job) for job in jobs]
    assert [_checked(o) for o in outcomes] == [_checked(o) for o in here]
    assert all(o.comparison is None for o in outcomes)
    # the workers ran on this process's clock, not the system's
    assert {o.result.validation["meta"]["run_id"]["run_time"] for o in outcomes if o.result} == {
        NOW.isoformat()
    }


def test_a_check_that_raises_raises_here_and_the_workers_carry_on(
    checked_by: str, small_warehouse: Path, demo_today: dt.date, tmp_path: Path
) -> None:
    (job, *_) = _jobs(small_warehouse, demo_today)
    missing = MartCheck(job.contract, tmp_path / "none.duckdb", "marts", None, None, demo_today)
    with pytest.raises(duckdb.Error, match=r"none\.duckdb"):
        check_marts([job, missing])
    (outcome,) = check_marts([job])
    assert outcome.result is not None and outcome.result.success


def test_a_helper_that_died_fails_its_batch_and_is_replaced(
    small_warehouse: Path, demo_today: dt.date
) -> None:
    (job, *_) = _jobs(small_warehouse, demo_today)
    check_marts([job])
    helper = workers._helper
    assert helper is not None
    for pid in list(helper._processes):  # the helper's one process
        os.kill(pid, signal.SIGKILL)
    with pytest.raises(BrokenProcessPool):
        check_marts([job])
    (outcome,) = check_marts([job])
    assert workers._helper is not helper
    assert outcome.result is not None and outcome.result.success


def test_the_helper_ends_when_the_process_that_started_it_is_killed() -> None:
    """A refresh killed outright leaves no helper behind, holding its memory and the standard
    streams it inherited: reading them to their end (as here) would wait for it."""
    code = (
        "import os\n"
        "from findata.orchestration.checks import workers\n"
        "workers.start_check_workers()\n"
        "print(*workers._helper._processes, flush=True)\n"
        "os._exit(0)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    (helper,) = (int(pid) for pid in out.stdout.split())
    assert not psutil.pid_exists(helper) or psutil.Process(helper).status() == "zombie"


def test_stopping_the_workers_ends_the_helper(small_warehouse: Path, demo_today: dt.date) -> None:
    (job, *_) = _jobs(small_warehouse, demo_today)
    check_marts([job])
    assert workers._helper is not None
    (helper,) = workers._helper._processes
    stop_check_workers()
    assert workers._helper is None
    assert not psutil.pid_exists(helper) or psutil.Process(helper).status() == "zombie"


@pytest.fixture
def warm() -> Iterator[int]:
    """This process's checks server (its pid), and no helper of this process's own."""
    stop_check_workers()
    warm_checks.start_warm_checks()
    assert warm_checks._server is not None
    yield warm_checks._server.pid
    warm_checks.stop_warm_checks()


def test_stopping_the_server_ends_it_and_this_process_checks_with_its_own_helper(
    warm: int, small_warehouse: Path, demo_today: dt.date
) -> None:
    warm_checks.stop_warm_checks()
    assert not psutil.pid_exists(warm)
    assert not warm_checks.has_warm_checks()
    (job, *_) = _jobs(small_warehouse, demo_today)
    (outcome,) = check_marts([job])
    assert workers._helper is not None
    assert outcome.result is not None and outcome.result.success
    stop_check_workers()


def test_a_batch_a_dead_warm_checks_server_cannot_take_is_checked_by_this_processs_helper(
    warm: int, small_warehouse: Path, demo_today: dt.date
) -> None:
    os.kill(warm, signal.SIGKILL)
    psutil.Process(warm).wait(timeout=30)
    assert warm_checks.has_warm_checks()  # still pointed at it: the batch finds it gone
    (job, *_) = _jobs(small_warehouse, demo_today)
    (outcome,) = check_marts([job])
    assert workers._helper is not None
    assert outcome.result is not None and outcome.result.success
    stop_check_workers()
