"""The demo generator works on every day and for every seed.

- A sweep of more than 400 (seed, day) pairs over a whole year of days and as many seeds, on
  the tiny size through the real generator code: its own manifest check passes, the security
  master, corporate actions and index rosters pass their readers, every roster row names its
  member, and every scenario is exactly the case its key names (``landing_invariants``).
- A dozen days with the default size and seed through every landing reader: what ``findata
  demo`` writes on those days reads back, and its scenarios hold.

The pairs are fixed (not drawn per run) so that a failure names a pair that fails again.
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np
import pytest

from findata.demo.generate import DEFAULT_SEED
from tests.demo.landing_invariants import check_default_demo_on, check_seed_and_day

#: the day the defects of issue 12 were found on
REPORTED_DAY = dt.date(2026, 11, 24)

#: a dozen days that stress the calendar: after holidays, month and year ends, a leap day
DOZEN_DAYS = [
    dt.date(2026, 1, 2),  # first session after New Year's Day
    dt.date(2026, 2, 17),  # the day after Presidents' Day
    dt.date(2026, 3, 9),  # the Monday US clocks change
    dt.date(2026, 4, 6),  # the Monday after Good Friday
    dt.date(2026, 5, 26),  # the day after Memorial Day
    dt.date(2026, 7, 6),  # after Independence Day observed on a Friday
    dt.date(2026, 9, 8),  # the day after Labor Day
    REPORTED_DAY,
    dt.date(2026, 11, 27),  # the day after Thanksgiving
    dt.date(2026, 12, 31),
    dt.date(2027, 1, 1),  # a holiday
    dt.date(2028, 2, 29),  # a leap day
]


def _pairs() -> list[tuple[int, dt.date]]:
    """Every day of a whole year, each with a seed of its own; seeds 1..20 on the reported day;
    the default seed on each of the dozen days and around leap days."""
    year = [dt.date(2025, 6, 1) + dt.timedelta(days=k) for k in range(365)]
    seeds = np.random.default_rng(20_261_124).integers(1, 2**31, size=len(year))
    leap = [dt.date(2028, 2, 28), dt.date(2028, 3, 1), dt.date(2024, 2, 29)]
    return (
        [(int(seed), day) for seed, day in zip(seeds, year, strict=True)]
        + [(seed, REPORTED_DAY) for seed in range(1, 21)]
        + [(DEFAULT_SEED, day) for day in DOZEN_DAYS + leap]
    )


def _in_two_processes(check: Callable[..., list[str]], *arguments: list[Any]) -> list[list[str]]:
    """``check`` over the argument lists in two worker processes (the machines that run the
    suite have two cores); each result is a list of problems."""
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=spawn) as pool:
        return list(pool.map(check, *arguments, chunksize=max(1, len(arguments[0]) // 24)))


def test_every_seed_and_day_gives_valid_landing_and_true_scenarios() -> None:
    pairs = _pairs()
    assert len(pairs) >= 400
    assert len({seed for seed, _ in pairs}) >= 300
    assert max(day for _, day in pairs) - min(day for _, day in pairs) >= dt.timedelta(days=365)
    started = time.monotonic()
    results = _in_two_processes(check_seed_and_day, *(list(a) for a in zip(*pairs, strict=True)))
    problems = [problem for found in results for problem in found]
    assert not problems, "\n".join(problems[:20])
    print(f"{len(pairs)} (seed, day) pairs in {time.monotonic() - started:.1f} s")


@pytest.fixture(scope="module")
def dozen_days() -> dict[dt.date, list[str]]:
    """The problems of the default demo on each of the dozen days, generated in parallel."""
    return dict(zip(DOZEN_DAYS, _in_two_processes(check_default_demo_on, DOZEN_DAYS), strict=True))


@pytest.mark.parametrize("today", DOZEN_DAYS, ids=str)
def test_the_default_demo_reads_back_on_a_dozen_days(
    today: dt.date, dozen_days: dict[dt.date, list[str]]
) -> None:
    assert dozen_days[today] == []
