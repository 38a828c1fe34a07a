"""Landing units parsed in worker processes, in landing order.

Parsing is pure Python and pandas per file (an SEC filing is a few milliseconds of XML or JSON
and small frames), so one process uses one core: the large demo's SEC sources took 150-170 s of
its full refresh on one of this machine's two cores. When a source has enough units to parse,
they go to a pool of processes, each returning a unit's frames (pickled), and the results come
back in landing order, so the rows and their order are exactly the serial ones.

The workers come from a fork server that has imported the readers once: not forked from the
pipeline's process, which holds DuckDB connections and threads (Dagster's, DuckDB's and Arrow's
pools), and not each importing pandas and the readers again as spawned ones would.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from findata.sources.landing import LANDING_SOURCES, Tables

#: fewer units than this are parsed here: starting the workers costs more than they would save
POOL_FROM_UNITS = 64
#: units sent to a worker at a time (fewer round trips; small enough to keep both busy)
CHUNK_UNITS = 16


def read_units(
    source_name: str, units: list[tuple[str, Path]], workers: int
) -> Iterator[tuple[str, Tables]]:
    """Each ``(key, unit)``'s parsed tables, in the order given; across ``workers`` processes
    when there are at least ``POOL_FROM_UNITS`` units. The first malformed file in that order
    raises its ``MalformedFileError``, as the serial reading would (from a worker, units of its
    batch before the file are not given first: the load stops there either way)."""
    if workers < 2 or len(units) < POOL_FROM_UNITS:
        read = LANDING_SOURCES[source_name].read_unit
        for key, unit in units:
            yield key, read(unit)
        return
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["findata.sources.landing"])
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
    try:
        parsed = pool.map(
            _read_unit,
            [source_name] * len(units),
            [unit for _, unit in units],
            chunksize=CHUNK_UNITS,
        )
        for (key, _), tables in zip(units, parsed, strict=True):
            yield key, tables
    finally:
        # after a malformed file (or a reader that stopped early) the rest is not parsed
        pool.shutdown(wait=True, cancel_futures=True)


def _read_unit(source_name: str, unit: Path) -> Tables:
    """One unit's tables (in a worker: the source's reader is found by name, as a closure does
    not pickle)."""
    return LANDING_SOURCES[source_name].read_unit(unit)
