"""What a Dagster run recorded, read from the instance at ``DAGSTER_HOME``; a refresh killed
mid-run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg

from findata.settings import Settings


def step_errors(run_id: str) -> dict[str, str]:
    """The failed steps of a run and their errors, with their causes."""
    with dg.DagsterInstance.get() as instance:
        failures = instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE)
    return {
        str(entry.step_key): entry.dagster_event.step_failure_data.error.to_string()
        for entry in failures
    }


def refresh_when_dbt_logs(
    settings: Settings, marker: bytes, **popen: Any
) -> tuple[subprocess.Popen[bytes], bool]:
    """Start ``findata refresh`` in a process group of its own (``popen``: its streams, DEVNULL
    unless given) and return it once dbt's log shows ``marker`` (True), or once it ended first
    (False)."""
    log = settings.dbt_target_dir / "build" / "dbt.log"
    offset = log.stat().st_size if log.exists() else 0
    streams = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, **popen}
    refresh = subprocess.Popen(
        [str(Path(sys.executable).parent / "findata"), "refresh"],
        start_new_session=True,
        **streams,
    )
    deadline = time.monotonic() + 600
    while refresh.poll() is None and time.monotonic() < deadline:
        if log.exists():
            with log.open("rb") as handle:
                handle.seek(offset)
                if marker in handle.read():
                    return refresh, True
        time.sleep(0.01)
    refresh.wait(timeout=600)
    return refresh, False


def kill_refresh_when_dbt_logs(
    settings: Settings, marker: bytes, before_kill: Callable[[], None] = lambda: None
) -> bool:
    """Start ``findata refresh`` in a process group of its own and SIGKILL the group as soon as
    dbt's log shows ``marker`` (``before_kill()`` first); True when it was killed (False: it
    ended first)."""
    refresh, seen = refresh_when_dbt_logs(settings, marker)
    if not seen:
        return False
    before_kill()
    os.killpg(refresh.pid, signal.SIGKILL)
    refresh.wait()
    return True
