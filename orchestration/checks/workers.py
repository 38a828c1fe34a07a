"""A refresh's contract checks on both cores, in processes that have Great Expectations imported.

A mart's check is Python (GE's work for each expectation, on pandas frames) and holds one core.
A refresh checked its marts one after another while the other core idled, since dbt has ended by
then. The checks now run in worker processes:

- A helper process (:func:`start_check_workers`) imports GE and the checks once, for seconds.
  A refresh starts it when its dbt step starts, so the import runs beside dbt. Neither the
  refresh's process nor the workers then import GE.
- The helper takes each batch of marts (:func:`check_marts`) and forks ``CHECK_WORKERS`` workers
  from itself. Forking is copy-on-write and takes milliseconds. The workers take the marts one
  at a time; each opens the build warehouse read-only itself (:func:`check_against_version`).

The helper is spawned, not forked from the refresh's process: that process holds Dagster's
threads and DuckDB's and Arrow's thread pools, which a fork would copy half-held. The helper
lives as long as the process that started it, and the workers as long as the helper: each
watches its parent and exits when it has gone (:func:`_end_with_parent`). The outcomes come
back pickled, in the marts' order.
"""

from __future__ import annotations

import datetime as dt
import gc
import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

import duckdb

from findata.clock import ManualClock, SystemClock, get_clock, set_clock
from findata.contracts.datasets import DatasetContract
from findata.orchestration.checks.gx_runtime import import_gx
from findata.orchestration.checks.results import ContractCheckResult
from findata.orchestration.checks.unchanged import VersionComparison, compare_with_version
from findata.orchestration.checks.warehouse import check_mart

#: marts checked at once (the machine's two cores: dbt has ended when the checks run)
CHECK_WORKERS = 2
#: how often the helper and the workers look whether their parent is still there
PARENT_POLL_SECONDS = 0.5
#: the helper imports at a lower priority: beside dbt (the refresh's critical path, both cores
#: busy) it takes what dbt leaves; the checks wait for it only if it has not finished by then
HELPER_NICENESS = 10


@dataclass(frozen=True)
class MartCheck:
    """One mart to check: ``<schema>.<contract.name>`` in ``warehouse``, compared with the
    ``comparable`` version (``build_inputs.comparable_version``; None: check every row)."""

    contract: DatasetContract
    warehouse: Path
    schema: str
    comparable: tuple[str, Path] | None
    previous_rows: int | None
    today: dt.date


@dataclass(frozen=True)
class MartCheckOutcome:
    """How a mart compared with the version (None: no version to compare with), and its check
    (None: its rows are the version's, which passed this contract: not checked again)."""

    comparison: VersionComparison | None
    result: ContractCheckResult | None


def check_against_version(job: MartCheck) -> MartCheckOutcome:
    """Check ``job``'s mart: not again when its rows are the comparable version's, else on its
    changed rows or whole (``warehouse.check_mart``)."""
    with duckdb.connect(str(job.warehouse), read_only=True) as con:
        comparison = compare_with_version(con, job.schema, job.contract, job.comparable)
        if comparison is not None and comparison.unchanged:
            return MartCheckOutcome(comparison, None)
        result = check_mart(
            con,
            job.schema,
            job.contract,
            today=job.today,
            previous_rows=job.previous_rows,
            compared_with=comparison,
        )
    return MartCheckOutcome(comparison, result)


_helper: ProcessPoolExecutor | None = None


def start_check_workers() -> None:
    """Start this process's helper (once): it imports GE from now on, in its own process.
    Nothing to start in a process whose batches go to a warm checks server."""
    from findata.orchestration.checks.warm_checks import has_warm_checks

    if not has_warm_checks():
        _start_helper()


def _start_helper() -> None:
    """This process's helper, started unless it runs (a batch a warm checks server did not
    take is checked here)."""
    global _helper
    if _helper is None:
        _helper = ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_prepare_helper,
            initargs=(os.getpid(),),
        )
        _helper.submit(int)  # the helper starts (and imports) now, not at the first batch


def stop_check_workers() -> None:
    """End this process's helper, if it started one (a process that serves after its refresh
    needs it no more)."""
    global _helper
    if _helper is not None:
        _helper.shutdown(wait=True, cancel_futures=True)
        _helper = None


def check_marts(jobs: list[MartCheck]) -> list[MartCheckOutcome]:
    """Every job's outcome, in order, checked ``CHECK_WORKERS`` at a time. A check that raises
    raises here; a helper that died is replaced at the next call."""
    from findata.orchestration.checks.warm_checks import check_in_warm_server

    global _helper
    if not jobs:
        return []
    clock = get_clock()
    # the workers' clock: the process's own, unless a test or server installed another
    now = None if isinstance(clock, SystemClock) else clock.now()
    outcomes = check_in_warm_server(jobs, now)
    if outcomes is not None:
        return outcomes
    _start_helper()
    assert _helper is not None
    try:
        return _helper.submit(check_in_workers, jobs, now).result()
    except BrokenProcessPool:
        _helper = None
        raise


def _end_with_parent(parent: int) -> None:
    """Exit once process ``parent``, which started this one, has ended.

    A process killed outright (SIGKILL, a crash, ``os._exit``) does not shut its pool down.
    Its pool's processes hold both ends of their task queue themselves, so they would never
    read its end. Left waiting, each would keep its memory and the standard streams it
    inherited: a caller reading those streams to their end would wait forever. A process
    whose parent ends is adopted by another, so its parent id changes.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()


def _prepare_helper(parent: int) -> None:
    """In the helper: end with ``parent``; import what the checks use, at a lower priority, and
    keep it out of the collector's way (its forks then share those pages instead of copying
    them as the collector touches them)."""
    _end_with_parent(parent)
    os.nice(HELPER_NICENESS)
    import_gx()
    gc.freeze()


def check_in_workers(jobs: list[MartCheck], now: dt.datetime | None) -> list[MartCheckOutcome]:
    """In a helper (this module's, or one a warm checks server forked): ``jobs`` checked in
    workers forked from it, their outcomes in order."""
    workers = ProcessPoolExecutor(
        max_workers=min(CHECK_WORKERS, len(jobs)),
        mp_context=multiprocessing.get_context("fork"),
        initializer=_prepare_worker,
        initargs=(now, os.getpid()),
    )
    with workers:
        return list(workers.map(check_against_version, jobs))


def _prepare_worker(now: dt.datetime | None, helper: int) -> None:
    """In a worker: end with the ``helper``; the clock of the process that asked for the
    checks."""
    _end_with_parent(helper)
    if now is not None:
        set_clock(ManualClock(now))
