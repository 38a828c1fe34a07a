"""Fetching the SEC's files into landing as a Dagster asset, partitioned by filing day: a day's
run fetches that day's form index and what it lists (``findata.sources.edgar``); a backfill from
the UI runs a day a run, all under the home's one SEC rate. The ``sec_fetch_daily`` schedule
fetches each day's index the next morning, after EDGAR publishes it, and a sensor starts the
refresh after each successful fetch."""

import datetime as dt
from typing import Any

import dagster as dg

from findata.clock import get_clock
from findata.settings import get_settings

SEC_FETCH = dg.AssetKey(["landing", "sec_edgar"])
#: Form 4 has been filed as XML since 2003-06-30; earlier days hold nothing the readers read
SEC_FILING_DAYS = dg.DailyPartitionsDefinition(start_date="2003-06-30", timezone="UTC")
#: EDGAR publishes a day's form index late that evening (US Eastern): fetch it at 06:00 UTC
SEC_FETCH_HOUR_UTC = 6


@dg.asset(
    key=SEC_FETCH,
    partitions_def=SEC_FILING_DAYS,
    group_name="fetch",
    kinds={"python"},
    description="The SEC's files of a filing day in landing (sec/): the day's form index, the "
    "submissions and companyfacts of the companies that filed, their Form 4 and 13F-HR "
    "documents; the companies of FINDATA_SEC_TICKERS/CIKS/EXCHANGES, the forms of "
    "FINDATA_SEC_FORMS. Needs FINDATA_SEC_USER_AGENT.",
)
def sec_edgar(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    """Fetch the partition's filing day."""
    # imported here: httpx, tenacity and pyrate-limiter cost every process that loads the
    # definitions (each refresh) ~0.1-0.4 s, and only a fetch needs them
    from findata.sources.edgar.fetch import fetch_sec, request_for

    day = dt.date.fromisoformat(context.partition_key)
    settings = get_settings()
    request = request_for(settings, since=day, until=day)
    summary = fetch_sec(settings, request, get_clock()).as_json()
    context.log.info(
        f"SEC fetch of {day}: {summary['files']} files landed, "
        f"{summary['requests']} requests, {summary['retries']} retries"
    )
    landed = summary.pop("landed")
    return dg.MaterializeResult(
        metadata={
            **{k: v for k, v in summary.items() if v is not None},
            "landed_sample": dg.MetadataValue.json(landed[:50]),
        }
    )


sec_fetch_job = dg.define_asset_job(
    "sec_fetch",
    selection=dg.AssetSelection.assets(SEC_FETCH),  # its partitions are the asset's
    description="The SEC's files of filing days into landing.",
)


def sec_fetch_schedule(default_status: dg.DefaultScheduleStatus) -> dg.ScheduleDefinition:
    """Each day's fetch (the day before, the last whole partition) the next morning."""
    return dg.build_schedule_from_partitioned_job(
        sec_fetch_job,
        name="sec_fetch_daily",
        hour_of_day=SEC_FETCH_HOUR_UTC,
        default_status=default_status,
    )


def refresh_after_sec_fetch(
    refresh_job: Any, default_status: dg.DefaultSensorStatus
) -> dg.SensorDefinition:
    """A refresh (``refresh_job``: what ``define_asset_job`` made) after each successful fetch
    run, so the refresh sees the whole day (the landing sensor may start one while a fetch is
    still landing files). After a fetch that landed nothing, that refresh stops at its first
    step."""

    @dg.run_status_sensor(
        run_status=dg.DagsterRunStatus.SUCCESS,
        monitored_jobs=[sec_fetch_job],
        request_job=refresh_job,
        default_status=default_status,
        name="refresh_after_sec_fetch",
    )
    def refresh_after_fetch(context: dg.RunStatusSensorContext) -> dg.RunRequest:
        return dg.RunRequest(run_key=f"after-{context.dagster_run.run_id}")

    return refresh_after_fetch
