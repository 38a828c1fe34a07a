"""How the refreshes went, from the Dagster instance's run records.

Every refresh is a run of the ``refresh`` job recorded in the home's instance, whoever started
it: ``findata refresh`` (``refresh.py``), the daily schedule, the landing sensor, the UI. The
instance is durable and shared by every pipeline host (PostgreSQL at scale), so what is read
here is right from any process, across restarts, for failures too (a failed refresh publishes
nothing, but its run is recorded FAILURE). A ``findata refresh`` that found nothing changed
starts no run and is not counted.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from findata.orchestration.dagster_instance import prepare_dagster_home
from findata.settings import Settings

if TYPE_CHECKING:
    import dagster as dg

REFRESH_JOB = "refresh"  # definitions.py


@dataclass(frozen=True)
class RefreshHistory:
    """The refresh runs on record (times are Unix seconds)."""

    #: when the newest successful run ended, and how long it ran (None before the first)
    last_success_end: float | None
    last_success_seconds: float | None
    #: runs that failed, and when the newest of them ended (None before the first)
    failures: int
    last_failure_end: float | None


class RefreshRuns:
    """Reads the refresh history of the instance of ``settings``' home. The instance (and
    Dagster, ~0.7 s and ~30 MB to import) is opened at the first read, then kept."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._instance: dg.DagsterInstance | None = None
        self._lock = threading.Lock()

    def read(self) -> RefreshHistory:
        """The history now (a few indexed queries on the run storage)."""
        from dagster import DagsterRunStatus, RunsFilter

        with self._lock:
            instance = self._open()
            succeeded = instance.get_run_records(
                RunsFilter(job_name=REFRESH_JOB, statuses=[DagsterRunStatus.SUCCESS]), limit=1
            )
            failed = RunsFilter(job_name=REFRESH_JOB, statuses=[DagsterRunStatus.FAILURE])
            last_failure = instance.get_run_records(failed, limit=1)
            failures = instance.get_runs_count(failed)
        success = succeeded[0] if succeeded else None
        return RefreshHistory(
            last_success_end=None if success is None else success.end_time,
            last_success_seconds=(
                success.end_time - success.start_time
                if success is not None and success.end_time and success.start_time
                else None
            ),
            failures=failures,
            last_failure_end=last_failure[0].end_time if last_failure else None,
        )

    def close(self) -> None:
        """Let go of the instance's storage (a later read opens it again)."""
        with self._lock:
            if self._instance is not None:
                self._instance.dispose()
                self._instance = None

    def _open(self) -> dg.DagsterInstance:
        if self._instance is None:
            import dagster as dg

            # the instance's dagster.yaml is written from the settings, as a refresh does
            self._instance = dg.DagsterInstance.from_config(
                str(prepare_dagster_home(self.settings))
            )
        return self._instance
