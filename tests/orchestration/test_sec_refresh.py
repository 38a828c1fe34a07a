"""From EDGAR to the API: files fetched from the stand-in for EDGAR (recorded public filings),
and nothing else (no vendor file: no prices, no security master), are refreshed into a published
version, and the API answers the real values they hold, for companies known from the SEC's
company list alone."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from findata.api.app import create_app
from findata.clock import ManualClock, set_clock
from findata.orchestration.refresh import run_refresh
from findata.settings import get_settings
from findata.sources.edgar.fetch import FetchRequest, fetch_sec
from tests.api.server import serve
from tests.databases import upgraded
from tests.sources.edgar.edgar_server import (
    LTS,
    MARVELL,
    TESLA,
    TESLA_FORM4,
    serve_recorded,
    stand_in_environment,
)

#: the day the fetch ran: the SEC's tickers are known from then on, not before
FETCHED = dt.datetime(2023, 11, 20, tzinfo=dt.UTC)
#: the refresh and the API run on this day, after the recorded files' last filing (Marvell's
#: companyfacts hold filings to 2026-05-28): on an earlier day those would be in the future and
#: the contract checks refuse them, so the test would depend on the day it runs
REFRESHED = dt.datetime(2026, 6, 1, 12, tzinfo=dt.UTC)


def test_fetched_filings_are_published_and_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edgar = serve_recorded()
    try:
        for name, value in stand_in_environment(edgar, tmp_path).items():
            monkeypatch.setenv(name, value)
        settings = get_settings()
        clock = ManualClock(FETCHED)
        for day in (dt.date(2021, 12, 16), dt.date(2023, 11, 14)):
            request = FetchRequest(since=day, until=day, ciks=frozenset({TESLA, MARVELL, LTS}))
            fetch_sec(settings, request, clock, sleep=lambda _: None)
    finally:
        edgar.stop()
    assert not (tmp_path / "landing" / "prices").exists()  # only what the SEC publishes
    upgraded(settings.control_plane_url)
    serving = ManualClock(REFRESHED)
    previous = set_clock(serving)  # the checks' today
    try:
        outcome = run_refresh(settings)
        assert outcome.success and outcome.version, outcome

        with serve(create_app(settings, serving), serving) as api:
            key = api.new_key("max").key
            headers = {"Authorization": f"Bearer {key}"}
            managers = api.client().get("/v1/managers", params={"search": "LTS"}, headers=headers)
            assert managers.status_code == 200, managers.text
            (manager,) = managers.json()["data"]
            assert (manager["manager_id"], manager["manager_name"]) == (
                LTS,
                "LTS One Management LP",
            )
            holdings = api.client().get(
                f"/v1/managers/{LTS}/holdings", params={"limit": 100}, headers=headers
            )
            assert holdings.status_code == 200, holdings.text
            rows = {row["cusip"]: row for row in holdings.json()["data"]}
            # LTS One's 13F-HR for 2023-09-30 (0001894188-23-000007), line 8: International
            # Flavors & Fragrances, 2,265,000 shares worth $154,405 thousand (values in dollars
            # since 2023)
            iff = rows["459506101"]
            assert iff["name_of_issuer"] == "INTERNATIONAL FLAVORS&FRAGRA"
            assert (iff["shares"], iff["value_usd"]) == (2_265_000, 154_405_000)
            assert (iff["report_date"], iff["filing_date"]) == ("2023-09-30", "2023-11-14")
            assert iff["accession"] == "0001894188-23-000007"
            assert len(rows) == 14  # every line of its information table

            # Tesla, known from the SEC's company list alone: an issuer and its one ticker
            resolved = api.client().get("/v1/resolve/TSLA", headers=headers)
            assert resolved.status_code == 200, resolved.text
            (entity,) = resolved.json()["data"]["TSLA"]["entities"]
            assert entity["cik"] == f"{TESLA:010d}" and entity["name"] == "Tesla, Inc."
            assert entity["exchange"] == "XNAS" and entity["country"] is None
            assert (
                entity["ticker_valid_from"] == FETCHED.date().isoformat()
            )  # first seen, not before
            # Elon Musk's Form 4 of 2021-12-16 (0000899243-21-048676): 2,151,940 shares of common
            # stock acquired by exercising options at $6.24 (code M)
            insiders = api.client().get(
                "/v1/insiders/TSLA", params={"include_uncoded": "true"}, headers=headers
            )
            assert insiders.status_code == 200, insiders.text
            lines = [row for row in insiders.json()["data"] if row["document_id"] == TESLA_FORM4]
            exercise = next(
                row for row in lines if row["transaction_code"] == "M" and not row["is_derivative"]
            )
            assert (exercise["shares"], exercise["price_per_share"]) == (2_151_940, 6.24)
            assert exercise["transaction_date"] == "2021-12-16"
            assert exercise["entity_id"] == entity["issuer_entity_id"]
            # Marvell's 10-Q for the quarter ended 2023-10-28 (0001835632-23-000046): revenue
            # $1,418.6 million, a net loss of $164.3 million
            fundamentals = api.client().get(
                "/v1/fundamentals/MRVL", params={"period": "quarterly"}, headers=headers
            )
            assert fundamentals.status_code == 200, fundamentals.text
            quarter = next(
                row for row in fundamentals.json()["data"] if row["period_end"] == "2023-10-28"
            )
            assert (quarter["revenue"], quarter["net_income"]) == (1_418_600_000, -164_300_000)
            # and its 10-K for the fiscal year ended 2023-01-28 (0001835632-23-000013): revenue
            # $5,919.6 million, a net loss of $163.5 million
            annual = api.client().get(
                "/v1/fundamentals/MRVL", params={"period": "annual"}, headers=headers
            )
            assert annual.status_code == 200, annual.text
            year = next(row for row in annual.json()["data"] if row["period_end"] == "2023-01-28")
            assert (year["revenue"], year["net_income"]) == (5_919_600_000, -163_500_000)
    finally:
        set_clock(previous)
