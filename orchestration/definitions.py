"""The Dagster definitions: ``dagster dev -m orchestration.definitions`` or ``findata ui``."""

import dagster as dg

from findata.orchestration.assets.build_inputs import build_inputs_gate
from findata.orchestration.assets.checks import contract_checks
from findata.orchestration.assets.dbt import dbt_models
from findata.orchestration.assets.publishing import REFRESH_CRON, publish_version
from findata.orchestration.assets.raw import raw_tables
from findata.orchestration.assets.sec_fetch import (
    SEC_FETCH,
    refresh_after_sec_fetch,
    sec_edgar,
    sec_fetch_job,
    sec_fetch_schedule,
)
from findata.orchestration.refresh_lock import REFRESH_LOCK, refresh_lock
from findata.orchestration.sensors import build_landing_sensor
from findata.settings import get_settings

# a run's event lines (``findata refresh``, ``demo``, runs the UI, schedule or sensor launch) in
# the format of every other line (FINDATA_LOG_FORMAT): Dagster's own JSON console logger in place
# of its colored one. Dagster uses a job's logger only when the run's config names it, so the
# job's default config names it, and ``findata refresh`` adds RUN_LOGGING to its run config
_json_runs = get_settings().log_format == "json"
RUN_LOGGING = {"loggers": {"console": {"config": {"log_level": "DEBUG"}}}} if _json_runs else {}

refresh_job = dg.define_asset_job(
    "refresh",
    # the fetch is its own job, by filing day: a refresh builds from what is in landing
    selection=dg.AssetSelection.all() - dg.AssetSelection.assets(SEC_FETCH),
    description="Landing to a published version.",
    config=RUN_LOGGING or None,
)

# the schedule and the sensor run unless the settings say not to (FINDATA_SCHEDULED_REFRESH):
# the publish's freshness policy expects a refresh every weekday
_scheduled = get_settings().scheduled_refresh
_schedule_status = (
    dg.DefaultScheduleStatus.RUNNING if _scheduled else dg.DefaultScheduleStatus.STOPPED
)
_sensor_status = dg.DefaultSensorStatus.RUNNING if _scheduled else dg.DefaultSensorStatus.STOPPED
# the SEC fetch runs by default only on a home that said who it is (FINDATA_SEC_USER_AGENT)
_fetching = _scheduled and get_settings().sec_user_agent is not None
_fetch_status = dg.DefaultScheduleStatus.RUNNING if _fetching else dg.DefaultScheduleStatus.STOPPED
_after_fetch_status = (
    dg.DefaultSensorStatus.RUNNING if _fetching else dg.DefaultSensorStatus.STOPPED
)

defs = dg.Definitions(
    assets=[sec_edgar, build_inputs_gate, raw_tables, dbt_models, publish_version],
    asset_checks=contract_checks,
    jobs=[refresh_job, sec_fetch_job],
    schedules=[
        # after the US close (21:00 UTC) on every weekday
        dg.ScheduleDefinition(
            job=refresh_job,
            cron_schedule=REFRESH_CRON,
            execution_timezone="UTC",
            name="daily_refresh",
            default_status=_schedule_status,
        ),
        sec_fetch_schedule(_fetch_status),
    ],
    sensors=[
        build_landing_sensor(refresh_job.name, _sensor_status),
        refresh_after_sec_fetch(refresh_job, _after_fetch_status),
    ],
    resources={REFRESH_LOCK: refresh_lock},
    loggers={"console": dg.json_console_logger} if _json_runs else None,
    # one step at a time: every step writes or reads the one build warehouse (DuckDB allows a
    # single writer)
    executor=dg.in_process_executor,
)
