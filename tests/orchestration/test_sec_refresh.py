"""From EDGAR to the API: files fetched from the stand-in for EDGAR (recorded public filings),
with the vendor files of the docs' examples beside them, are refreshed into a published version,
and the API answers the real values they hold."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from findata.api.app import create_app
from findata.clock import ManualClock
from findata.orchestration.refresh import run_refresh
from findata.settings import get_settings
from findata.sources.edgar.fetch import FetchRequest, fetch_sec
from tests.api.server import serve
from tests.databases import upgraded
from tests.sources.edgar.edgar_server import (
    LTS,
    MARVELL,
    TESLA,
    serve_recorded,
    stand_in_environment,
)

EXAMPLES = Path(__file__).parents[2] / "docs" / "examples" / "landing"


def test_fetched_filings_are_published_and_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edgar = serve_recorded()
    try:
        for name, value in stand_in_environment(edgar, tmp_path).items():
            monkeypatch.setenv(name, value)
        settings = get_settings()
        clock = ManualClock(dt.datetime(2023, 11, 20, tzinfo=dt.UTC))
        for day in (dt.date(2021, 12, 16), dt.date(2023, 11, 14)):
            request = FetchRequest(since=day, until=day, ciks=frozenset({TESLA, MARVELL, LTS}))
            fetch_sec(settings, request, clock, sleep=lambda _: None)
    finally:
        edgar.stop()
    # prices, corporate actions, the security master and index rosters are vendor files
    for example in EXAMPLES.glob("*.csv"):
        (tmp_path / "landing" / example.stem).mkdir()
        shutil.copy(example, tmp_path / "landing" / example.stem)
    upgraded(settings.control_plane_url)
    outcome = run_refresh(settings)
    assert outcome.success and outcome.version, outcome

    serving = ManualClock(dt.datetime.now(dt.UTC))
    with serve(create_app(settings, serving), serving) as api:
        key = api.new_key("max").key
        headers = {"Authorization": f"Bearer {key}"}
        managers = api.client().get("/v1/managers", params={"search": "LTS"}, headers=headers)
        assert managers.status_code == 200, managers.text
        (manager,) = managers.json()["data"]
        assert (manager["manager_id"], manager["manager_name"]) == (LTS, "LTS One Management LP")
        holdings = api.client().get(
            f"/v1/managers/{LTS}/holdings", params={"limit": 100}, headers=headers
        )
        assert holdings.status_code == 200, holdings.text
        rows = {row["cusip"]: row for row in holdings.json()["data"]}
        # LTS One's 13F-HR for 2023-09-30 (0001894188-23-000007), line 8: International Flavors &
        # Fragrances, 2,265,000 shares worth $154,405 thousand (values in dollars since 2023)
        iff = rows["459506101"]
        assert iff["name_of_issuer"] == "INTERNATIONAL FLAVORS&FRAGRA"
        assert (iff["shares"], iff["value_usd"]) == (2_265_000, 154_405_000)
        assert (iff["report_date"], iff["filing_date"]) == ("2023-09-30", "2023-11-14")
        assert iff["accession"] == "0001894188-23-000007"
        assert len(rows) == 14  # every line of its information table
