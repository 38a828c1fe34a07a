"""What a Dagster run recorded, read from the instance at ``DAGSTER_HOME``."""

from __future__ import annotations

import dagster as dg


def step_errors(run_id: str) -> dict[str, str]:
    """The failed steps of a run and their errors, with their causes."""
    with dg.DagsterInstance.get() as instance:
        failures = instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE)
    return {
        str(entry.step_key): entry.dagster_event.step_failure_data.error.to_string()
        for entry in failures
    }
