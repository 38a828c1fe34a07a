"""The SEC fetch in Dagster: an asset partitioned by filing day, its own job (not part of the
refresh), a schedule the next morning, a refresh after each fetch; one day materialised against
the stand-in for EDGAR lands that day's filings."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from findata.orchestration.assets.sec_fetch import SEC_FETCH, sec_edgar
from findata.orchestration.definitions import defs
from tests.sources.edgar.edgar_server import (
    FIXTURES,
    IDENTITY,
    TESLA,
    TESLA_FORM4,
    EdgarServer,
    serve_recorded,
)


@pytest.fixture
def edgar() -> Iterator[EdgarServer]:
    server = serve_recorded()
    yield server
    server.stop()


def test_the_fetch_is_a_daily_partitioned_asset_with_its_job_schedule_and_sensor() -> None:
    asset = defs.resolve_assets_def(SEC_FETCH)
    partitions = asset.partitions_def
    assert isinstance(partitions, dg.DailyPartitionsDefinition)
    assert partitions.get_first_partition_key() == "2003-06-30"
    schedule = defs.resolve_schedule_def("sec_fetch_daily")
    assert (schedule.job_name, schedule.cron_schedule) == ("sec_fetch", "0 6 * * *")
    # without a declared identity the schedule cannot fetch: it starts stopped
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
    refresh = defs.resolve_job_def("refresh")
    assert SEC_FETCH not in refresh.asset_layer.selected_asset_keys
    assert defs.resolve_job_def("sec_fetch").asset_layer.selected_asset_keys == {SEC_FETCH}
    sensor = defs.resolve_sensor_def("refresh_after_sec_fetch")
    assert sensor.job_name == "refresh"


def test_materialising_a_day_lands_its_filings(
    edgar: EdgarServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "FINDATA_HOME": str(tmp_path),
        "FINDATA_SEC_USER_AGENT": IDENTITY,
        "FINDATA_SEC_WWW_URL": edgar.www_url,
        "FINDATA_SEC_DATA_URL": edgar.data_url,
        "FINDATA_SEC_REQUESTS_PER_SECOND": "10",
        "FINDATA_SEC_CIKS": f"[{TESLA}]",
        "FINDATA_SEC_FORMS": '["4"]',
    }.items():
        monkeypatch.setenv(name, value)
    result = dg.materialize([sec_edgar], partition_key="2021-12-16")
    assert result.success
    (materialization,) = result.asset_materializations_for_node("landing__sec_edgar")
    metadata = {k: v.value for k, v in materialization.metadata.items()}
    assert (metadata["since"], metadata["until"], metadata["filings"]) == (
        "2021-12-16",
        "2021-12-16",
        1,
    )
    landed = tmp_path / "landing" / "sec" / "form4" / f"{TESLA_FORM4}_doc4.xml"
    source = FIXTURES / "form4" / f"{TESLA_FORM4}_doc4.xml"
    assert (
        hashlib.sha256(landed.read_bytes()).digest() == hashlib.sha256(source.read_bytes()).digest()
    )
    assert not (tmp_path / "landing" / "sec" / "companyfacts").exists()  # forms: 4 alone


@pytest.mark.parametrize(
    ("agent", "scheduled", "status"),
    [(IDENTITY, None, "RUNNING"), (IDENTITY, "false", "STOPPED"), (None, None, "STOPPED")],
)
def test_the_fetch_schedule_runs_by_default_once_the_home_says_who_it_is(
    tmp_path: Path, agent: str | None, scheduled: str | None, status: str
) -> None:
    env = {**os.environ, "FINDATA_HOME": str(tmp_path), "DAGSTER_HOME": str(tmp_path)}
    for name, value in (
        ("FINDATA_SEC_USER_AGENT", agent),
        ("FINDATA_SCHEDULED_REFRESH", scheduled),
    ):
        env.pop(name, None)
        if value is not None:
            env[name] = value
    code = (
        "from findata.orchestration.definitions import defs\n"
        "print(defs.resolve_schedule_def('sec_fetch_daily').default_status.value,"
        " defs.resolve_sensor_def('refresh_after_sec_fetch').default_status.value)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == f"{status} {status}"
