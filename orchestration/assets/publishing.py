"""Publishing as assets: the version, its change records and its data.changed event.

They are one step (one multi-asset) because they are written in one control-plane transaction;
three assets make each visible in the UI with its own metadata and lineage.
"""

import datetime as dt
import logging
import time
from collections.abc import Iterator

import dagster as dg

from findata.clock import get_clock
from findata.logs import log_fields
from findata.orchestration.assets.checks import mart_asset_key
from findata.orchestration.build_inputs import comparable_version, finish_build
from findata.orchestration.refresh_lock import REFRESH_LOCK
from findata.published.publish import contracts_published, publish
from findata.published.retention import remove_superseded_versions
from findata.published.versions import current_version_at
from findata.settings import get_settings

PUBLISHED_VERSION = dg.AssetKey("published_version")
CHANGE_RECORDS = dg.AssetKey("change_records")
DATA_CHANGED_EVENT = dg.AssetKey("data_changed_event")

#: the daily refresh: after the US close (21:00 UTC) on every weekday (definitions.py)
REFRESH_CRON = "30 22 * * 1-5"
#: the published assets are late (the UI's freshness: failing) when no publish step ran between
#: the schedule's tick and an hour after it, the time a large refresh may take; Dagster's
#: freshness daemon (run by `findata ui`) evaluates it
PUBLISH_FRESHNESS = dg.FreshnessPolicy.cron(
    deadline_cron="30 23 * * 1-5", lower_bound_delta=dt.timedelta(hours=1), timezone="UTC"
)

log = logging.getLogger("findata.publish")


@dg.multi_asset(
    name="publish",
    required_resource_keys={REFRESH_LOCK},
    specs=[
        dg.AssetSpec(
            PUBLISHED_VERSION,
            freshness_policy=PUBLISH_FRESHNESS,
            group_name="publish",
            kinds={"duckdb"},
            deps=[mart_asset_key(c.name) for c in contracts_published()],
            description="An immutable DuckDB file of every contracted mart (views over part "
            "files that versions share where their rows are equal).",
        ),
        dg.AssetSpec(
            CHANGE_RECORDS,
            freshness_policy=PUBLISH_FRESHNESS,
            group_name="publish",
            deps=[PUBLISHED_VERSION],
            description="The change feed's records of this version.",
        ),
        dg.AssetSpec(
            DATA_CHANGED_EVENT,
            freshness_policy=PUBLISH_FRESHNESS,
            group_name="publish",
            deps=[CHANGE_RECORDS],
            description="The data.changed event announcing them.",
        ),
    ],
)
def publish_version(context: dg.AssetExecutionContext) -> Iterator[dg.MaterializeResult]:
    """Publish the marts as a new version if anything changed (orchestration.publish)."""
    settings = get_settings()
    clock = get_clock()
    started = time.perf_counter()
    run_id = context.run.run_id
    result = publish(
        settings,
        run_id=run_id,
        clock=clock,
        say=context.log.info,
        builds_on_current=comparable_version(settings, run_id) is not None,
    )
    retention = remove_superseded_versions(settings, clock.now())
    if retention.removed:
        context.log.info(f"removed versions replaced long enough ago: {retention.removed}")
    current = result.version
    if current is None:  # nothing new published: the version current before stays so
        row = current_version_at(settings.control_plane_url)
        current = None if row is None else row.label
    if current is not None:  # a next refresh with nothing new stops at its first step
        finish_build(settings, context.run.run_id, current)
    log.info(
        "publish: %s",
        result.version or "nothing changed",
        extra=log_fields(
            run_id=context.run.run_id,
            version=result.version,
            changed=result.changed,
            records=result.records,
            versions_removed=len(retention.removed),
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
        ),
    )
    if result.changed:
        context.log.info(f"published {result.version}: {result.records} change records")
    else:
        context.log.info("nothing changed: no version, no change record, no event")
    yield dg.MaterializeResult(
        asset_key=PUBLISHED_VERSION,
        metadata={
            "version": result.version or "(unchanged)",
            "changed": result.changed,
            "versions_on_disk": retention.kept,
            "parts_on_disk": retention.parts,
            "published_disk_bytes": dg.MetadataValue.int(retention.disk_bytes),
            "versions_removed": dg.MetadataValue.json(retention.removed),
        },
    )
    yield dg.MaterializeResult(
        asset_key=CHANGE_RECORDS,
        metadata={
            "records": result.records,
            "datasets": dg.MetadataValue.json(result.datasets),
            "from_rebuilt_rows": dg.MetadataValue.json(result.from_rebuilt_rows),
        },
    )
    yield dg.MaterializeResult(
        asset_key=DATA_CHANGED_EVENT, metadata={"event_id": result.event_id or "(none)"}
    )
