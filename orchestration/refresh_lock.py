"""One refresh run at a time per home: its build warehouse has a single writer.

DuckDB lets one process open a database file for writing, and a refresh run writes its home's
build warehouse from its raw step to its publish. A second run on the same home (a cron
``findata refresh`` overlapping a slow one, the sensor's run beside a command-line refresh)
failed in its raw step on DuckDB's file lock, with a traceback. Instead, a run holds an
exclusive ``flock`` on ``build/refresh.lock`` from before its first step to after its last
(:func:`refresh_lock`, a resource every step of the job requires: Dagster sets it up before
the plan and tears it down after it). A second run waits for it, saying whose run it waits
for, then starts from what that one left: often nothing has changed, and it stops at its
first step.

The kernel drops a ``flock`` with its process, so a killed refresh leaves no lock behind.
Hosts with homes of their own (the scale-out's pipeline hosts) each have their own lock; what
they publish is ordered by the publish lock (``lock.py``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg

from findata.settings import Settings, get_settings

#: the resource key every step of the refresh job requires: a run of any subset of the job
#: (the UI can materialize one asset) holds the lock too; in-process, Dagster sets a run's
#: resources up once, for its whole plan
REFRESH_LOCK = "refresh_lock"


def refresh_lock_path(settings: Settings) -> Path:
    """The lock file beside ``settings``' build warehouse."""
    return settings.build_dir / "refresh.lock"


@contextlib.contextmanager
def hold_refresh_lock(path: Path, holder: str, on_wait: Callable[[str], None]) -> Iterator[None]:
    """Hold the exclusive lock ``path`` while the block runs, writing ``holder`` (who holds it)
    into it. When another process holds it, ``on_wait(message)`` names that holder first, then
    this waits as long as it holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "unknown"
            on_wait(f"the build warehouse is in use ({other} holds {path}): waiting for it")
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder.encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


@dg.resource(
    description="Held by a refresh run from before its first step to after its last: one "
    "run at a time writes the home's build warehouse; a second waits."
)
def refresh_lock(context: dg.InitResourceContext) -> Iterator[None]:
    """The home's refresh lock, for the run that sets this resource up."""
    holder = f"run {context.run_id}, pid {os.getpid()}"
    on_wait = context.log.info if context.log is not None else print
    with hold_refresh_lock(refresh_lock_path(get_settings()), holder, on_wait):
        yield
