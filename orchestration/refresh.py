"""Running the refresh job in-process: the same Dagster job the UI runs, recorded in the same
instance (``$FINDATA_HOME/dagster``; its storage follows the settings: ``dagster_instance.py``).

The process model is this one process. Dagster's in-process executor runs the steps one after
another; the raw step reads landing here, dbt runs here through its Python API
(``dbt_runner.py``), the contract checks run here (``checks/marts.py``). No process-level
speed-up is kept: measured side by side on the small demo's one-day refresh (2026-11-28,
``benchmarks/pipeline.py``), a dbt worker and a checks worker that imported dbt and Great
Expectations on the other core while this process started saved 2.3 s of 13.8 s (17 %), under
the 20 % such machinery must earn. The forkserver pool that parsed landing files helps only a
full refresh (the large one's raw step: 142 s with it, 208 s without; a one-day refresh reads
one new file), so it went too.
"""

from __future__ import annotations

import gc
import sys
from dataclasses import dataclass, field

from findata.orchestration.dagster_instance import prepare_dagster_home
from findata.settings import Settings

DEFINITIONS = "findata.orchestration.definitions"


@dataclass(frozen=True)
class RefreshOutcome:
    """How a refresh ended: its run, whether it succeeded, and what it published."""

    #: None when no run was started (nothing changed: ``unchanged_since`` says since when)
    run_id: str | None
    success: bool
    version: str | None
    records: int
    failed_checks: list[str]
    #: the current version when nothing a build reads had changed since it was built (the run
    #: stopped at its first step); None when the run built
    unchanged_since: str | None = None
    #: marts whose contract check was not run again: their rows are the current version's
    unchanged_marts: list[str] = field(default_factory=list)
    #: marts checked on the rows they changed alone: how many rows each check read
    changed_rows_checked: dict[str, int] = field(default_factory=dict)
    #: marts checked on the rows their incremental build recomputed alone
    checked_from_rebuilt_rows: list[str] = field(default_factory=list)
    #: datasets fingerprinted and diffed on those rows alone when published
    published_from_rebuilt_rows: list[str] = field(default_factory=list)
    #: checks that failed with WARN severity (a contract's warning-level rules): reported,
    #: they did not stop the publish (``failed_checks`` are those that failed with ERROR)
    warned_checks: list[str] = field(default_factory=list)


def run_refresh(
    settings: Settings, *, force: bool = False, run_when_unchanged: bool = False
) -> RefreshOutcome:
    """Run the ``refresh`` job once on what is in landing (``force``: build even when nothing
    changed since the current version was built).

    When nothing a build reads changed, no run starts (the job's first step would stop it; the
    Dagster definitions alone take seconds to load): the outcome says since which version.
    ``run_when_unchanged`` starts the run all the same, as the schedule and the UI do.
    """
    if not (force or run_when_unchanged):
        from findata.orchestration.build_inputs import build_inputs, nothing_changed_since

        since = nothing_changed_since(settings, build_inputs(settings))
        if since is not None:
            return RefreshOutcome(None, True, None, 0, [], unchanged_since=since)
    prepare_dagster_home(settings)
    from findata.control_plane.database import require_upgraded

    # the run publishes to the control plane: a database never migrated is refused now, with
    # the message naming `findata db upgrade`, not as a failed step of the run
    require_upgraded(settings.control_plane_url)
    import dagster as dg

    from findata.orchestration.assets.build_inputs import BUILD_INPUTS
    from findata.orchestration.assets.publishing import CHANGE_RECORDS, PUBLISHED_VERSION

    first_load = DEFINITIONS not in sys.modules
    # the definitions parse the dbt project when its manifest is not current (a home's first
    # refresh: seconds)
    from findata.orchestration.definitions import RUN_LOGGING, defs

    if first_load:
        # what the imports made (Dagster, the definitions: ~1 M objects) lives as long as the
        # process: out of the collector's way, its full collections during the run walk only
        # what the run makes (the SEC readers make many; a small full refresh's raw step ~0.6 s
        # faster)
        gc.freeze()
    with dg.DagsterInstance.get() as instance:
        result = defs.resolve_job_def("refresh").execute_in_process(
            instance=instance,
            raise_on_error=False,
            run_config={**RUN_LOGGING, "ops": {"build_inputs": {"config": {"force": force}}}},
        )
        version, records, unchanged_since, published_from_rebuilt = None, 0, None, []
        for event in result.all_events:
            if event.event_type_value == "ASSET_OBSERVATION":
                observation = event.event_specific_data.asset_observation
                if observation.asset_key == BUILD_INPUTS:
                    unchanged_since = str(observation.metadata["unchanged_since"].value)
            if not event.is_step_materialization:
                continue
            materialization = event.step_materialization_data.materialization
            metadata = {k: v.value for k, v in materialization.metadata.items()}
            if materialization.asset_key == PUBLISHED_VERSION and metadata.get("changed"):
                version = str(metadata["version"])
            if materialization.asset_key == CHANGE_RECORDS:
                records = int(metadata.get("records", 0))
                published_from_rebuilt = list(metadata.get("from_rebuilt_rows") or [])
        evaluations = [
            e.asset_check_evaluation_data
            for e in result.all_events
            if e.event_type_value == "ASSET_CHECK_EVALUATION"
        ]
        unchanged_marts = sorted(
            c.asset_key.path[-1] for c in evaluations if "unchanged_since" in c.metadata
        )
        changed_rows_checked = {
            c.asset_key.path[-1]: int(c.metadata["changed_rows"].value)
            for c in evaluations
            if "changed_rows" in c.metadata
        }
        checked_from_rebuilt = sorted(
            c.asset_key.path[-1] for c in evaluations if "from_rebuilt_rows" in c.metadata
        )
        failed, warned = (
            [
                f"{c.asset_key.to_user_string()}:{c.check_name}"
                for c in evaluations
                if not c.passed and c.severity == severity
            ]
            for severity in (dg.AssetCheckSeverity.ERROR, dg.AssetCheckSeverity.WARN)
        )
        return RefreshOutcome(
            result.run_id,
            result.success,
            version,
            records,
            failed,
            unchanged_since,
            unchanged_marts,
            changed_rows_checked,
            checked_from_rebuilt,
            published_from_rebuilt,
            warned,
        )
