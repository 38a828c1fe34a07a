"""Freshness of the published assets in the Dagster UI (issue 22): each publish asset carries a
cron freshness policy whose window opens at the daily schedule's tick, so a weekday without a
publish in the hour after the schedule shows the publish as late."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.freshness import CronFreshnessPolicy, FreshnessState
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.test_utils import freeze_time
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
from dagster._daemon.freshness import FreshnessDaemon
from dagster._utils.schedules import get_latest_completed_cron_tick

from findata.orchestration.assets.publishing import (
    CHANGE_RECORDS,
    DATA_CHANGED_EVENT,
    PUBLISHED_VERSION,
)
from findata.orchestration.dagster_instance import prepare_dagster_home
from findata.orchestration.definitions import defs
from findata.settings import Settings

PUBLISH_KEYS = (PUBLISHED_VERSION, CHANGE_RECORDS, DATA_CHANGED_EVENT)


def test_the_published_assets_are_late_an_hour_after_a_scheduled_refresh_that_did_not_publish() -> (
    None
):
    graph = defs.resolve_asset_graph()
    schedule = defs.resolve_schedule_def("daily_refresh")
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


def _freshness_seen_by_the_daemon(
    instance: dg.DagsterInstance, at: dt.datetime
) -> dict[dg.AssetKey, FreshnessState]:
    """What Dagster's freshness daemon (the one ``findata ui`` runs) records for the publish
    assets in one pass over the real definitions at ``at``: the state the UI shows."""
    origin = InProcessCodeLocationOrigin(
        LoadableTargetOrigin(module_name="findata.orchestration.definitions")
    )
    with (
        freeze_time(at),
        WorkspaceProcessContext(instance, InProcessWorkspaceLoadTarget(origin)) as workspace,
    ):
        asyncio.run(FreshnessDaemon()._evaluate_assets(workspace))
    records = instance.get_freshness_state_records(list(PUBLISH_KEYS))
    return {key: records[key].freshness_state for key in PUBLISH_KEYS}


def _published(instance: dg.DagsterInstance, at: dt.datetime) -> None:
    with freeze_time(at):
        for key in PUBLISH_KEYS:
            instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key))


def test_the_freshness_daemon_marks_the_publish_late_when_a_weekday_passes_without_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    home = prepare_dagster_home(Settings(home=tmp_path / "findata"))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monday = dt.datetime(2026, 5, 4, tzinfo=dt.UTC)
    with dg.DagsterInstance.get() as instance:
        # Monday's scheduled refresh (22:30 UTC) published at 22:41
        _published(instance, monday.replace(hour=22, minute=41))
        on_time = _freshness_seen_by_the_daemon(instance, monday.replace(hour=23, minute=45))
        assert set(on_time.values()) == {FreshnessState.PASS}, on_time
        # Tuesday: no publish by 23:30, the deadline
        tuesday = monday + dt.timedelta(days=1)
        late = _freshness_seen_by_the_daemon(instance, tuesday.replace(hour=23, minute=31))
        assert set(late.values()) == {FreshnessState.FAIL}, late
        # a publish after the deadline makes it fresh again
        _published(instance, tuesday.replace(hour=23, minute=40))
        caught_up = _freshness_seen_by_the_daemon(instance, tuesday.replace(hour=23, minute=45))
        assert set(caught_up.values()) == {FreshnessState.PASS}, caught_up
        # the weekend expects nothing: Friday's publish is still fresh on Sunday evening
        friday = monday + dt.timedelta(days=4)
        _published(instance, friday.replace(hour=22, minute=50))
        sunday = _freshness_seen_by_the_daemon(
            instance, (friday + dt.timedelta(days=2)).replace(hour=23, minute=50)
        )
        assert set(sunday.values()) == {FreshnessState.PASS}, sunday
