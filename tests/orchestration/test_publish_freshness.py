"""Freshness of the published assets in the Dagster UI (issue 22): each publish asset carries a
cron freshness policy whose window opens at the daily schedule's tick, so a weekday without a
publish in the hour after the schedule shows the publish as late."""

from __future__ import annotations

import datetime as dt

import dagster as dg
from dagster._core.definitions.freshness import CronFreshnessPolicy
from dagster._utils.schedules import get_latest_completed_cron_tick

from findata.orchestration.assets.publishing import (
    CHANGE_RECORDS,
    DATA_CHANGED_EVENT,
    PUBLISHED_VERSION,
)
from findata.orchestration.definitions import defs


def test_the_published_assets_are_late_an_hour_after_a_scheduled_refresh_that_did_not_publish() -> (
    None
):
    graph = defs.resolve_asset_graph()
    (schedule,) = [s for s in defs.schedules or [] if isinstance(s, dg.ScheduleDefinition)]
    assert isinstance(schedule.cron_schedule, str)
    for key in (PUBLISHED_VERSION, CHANGE_RECORDS, DATA_CHANGED_EVENT):
        policy = graph.get(key).freshness_policy
        assert isinstance(policy, CronFreshnessPolicy), key
        assert policy.lower_bound_delta == dt.timedelta(hours=1)
        # on a Monday and on a Friday evening, after the deadline: the window the policy looks
        # at opens at that day's scheduled refresh
        for evening in (dt.datetime(2026, 5, 4, 23, 45), dt.datetime(2026, 5, 8, 23, 45)):
            evening = evening.replace(tzinfo=dt.UTC)
            deadline = get_latest_completed_cron_tick(policy.deadline_cron, evening, "UTC")
            scheduled = get_latest_completed_cron_tick(schedule.cron_schedule, evening, "UTC")
            assert deadline.date() == evening.date()
            assert deadline - policy.lower_bound_delta == scheduled
        # on a Sunday evening the window looked at is still Friday's
        sunday = dt.datetime(2026, 5, 10, 23, 45, tzinfo=dt.UTC)
        deadline = get_latest_completed_cron_tick(policy.deadline_cron, sunday, "UTC")
        assert deadline.date() == dt.date(2026, 5, 8)
