"""The SEC fetch in Dagster: an asset partitioned by filing day, its own job (not part of the
refresh), a schedule the next morning, a refresh after each fetch; one day materialised against
the stand-in for EDGAR lands that day's filings."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from findata.orchestration.assets.sec_fetch import SEC_FETCH, sec_edgar
from findata.orchestration.definitions import defs
from tests.sources.edgar.edgar_server import (
    FIXTURES,
    TESLA,
    TESLA_FORM4,
    EdgarServer,
    serve_recorded,
    stand_in_environment,
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
        **stand_in_environment(edgar, tmp_path),
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
