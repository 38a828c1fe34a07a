"""The refresh's first step: stop when nothing a build reads has changed (``build_inputs.py``).

The asset's output is optional: when landing, code and contracts are as they were when the
current version was built, it records an observation saying so and yields nothing, and Dagster
skips every step downstream (raw, dbt, checks, publish). ``force`` builds anyway.
"""

from collections.abc import Iterator

import dagster as dg

from findata.orchestration.build_inputs import build_inputs, nothing_changed_since, start_build
from findata.orchestration.dbt_scope import forget_dbt_build
from findata.orchestration.refresh_lock import REFRESH_LOCK
from findata.settings import get_settings
from findata.sources.raw import forget_landing_fingerprints

BUILD_INPUTS = dg.AssetKey("build_inputs")


class RefreshConfig(dg.Config):
    """How a refresh starts."""

    force: bool = False  # build from landing even when nothing changed since the last build


@dg.asset(
    key=BUILD_INPUTS,
    group_name="landing",
    output_required=False,
    required_resource_keys={REFRESH_LOCK},
    description="The fingerprint of landing, code and contracts; a refresh stops here when it "
    "equals the one the current version was built from.",
)
def build_inputs_gate(
    context: dg.AssetExecutionContext, config: RefreshConfig
) -> Iterator[dg.MaterializeResult]:
    """Go on (and record what this build starts from) unless nothing changed."""
    settings = get_settings()
    inputs = build_inputs(settings)
    unchanged = None if config.force else nothing_changed_since(settings, inputs)
    if unchanged is not None:
        context.log.info(
            f"nothing changed since {unchanged} was built (landing: {inputs.landing_files} "
            f"files, code and contracts: {inputs.code_files} files, as then): nothing runs"
        )
        context.log_event(
            dg.AssetObservation(
                asset_key=BUILD_INPUTS,
                metadata={"unchanged_since": unchanged, "fingerprint": inputs.fingerprint},
            )
        )
        return
    start_build(settings, inputs, context.run.run_id, forced=config.force)
    if config.force:
        forget_landing_fingerprints(settings.warehouse_path)  # every source is read again
        forget_dbt_build(settings)  # and every model rebuilt whole
    yield dg.MaterializeResult(
        metadata={
            "fingerprint": inputs.fingerprint,
            "landing_files": inputs.landing_files,
            "code_files": inputs.code_files,
            "forced": config.force,
        }
    )
