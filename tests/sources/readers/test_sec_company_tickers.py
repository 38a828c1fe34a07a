"""The SEC's company list, as the fetch lands it: one snapshot per day it changed."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from findata.sources.readers.errors import MalformedFileError
from findata.sources.readers.sec_company_tickers import read_company_tickers, snapshot_name

LIST = Path(__file__).parents[2] / "fixtures" / "sec-edgar" / "www" / "files"
LIST_FILE = LIST / "company_tickers_exchange.json"


def test_a_snapshot_reads_every_listed_ticker_as_seen_on_its_day(tmp_path: Path) -> None:
    day = dt.date(2023, 11, 20)
    snapshot = tmp_path / snapshot_name(day)
    shutil.copy(LIST_FILE, snapshot)
    frame = read_company_tickers(snapshot)
    document = json.loads(LIST_FILE.read_bytes())
    assert len(frame) == len(document["data"])
    assert list(frame.columns) == ["cik", "name", "ticker", "exchange", "seen_on"]
    tesla = frame[frame["ticker"] == "TSLA"].iloc[0]
    assert (tesla["cik"], tesla["name"], tesla["exchange"]) == (
        "0001318605",
        "Tesla, Inc.",
        "Nasdaq",
    )
    assert set(frame["seen_on"]) == {pd.Timestamp(day)}
    # a ticker the SEC lists on no exchange has a null exchange, not an empty string
    assert frame["exchange"].isna().sum() == sum(1 for row in document["data"] if not row[3])


@pytest.mark.parametrize(
    ("name", "body", "problem"),
    [
        ("company_tickers_exchange.json", {"fields": [], "data": []}, "not named"),
        ("company_tickers_exchange.20231340.json", {"fields": [], "data": []}, "not a date"),
        ("company_tickers_exchange.20231120.json", {"data": []}, "no 'fields'"),
        (
            "company_tickers_exchange.20231120.json",
            {"fields": ["cik", "name", "ticker"], "data": []},
            "fields lack exchange",
        ),
        (
            "company_tickers_exchange.20231120.json",
            {
                "fields": ["cik", "name", "ticker", "exchange"],
                "data": [["1318605", "T", "TSLA", None]],
            },
            "no CIK number",
        ),
        (
            "company_tickers_exchange.20231120.json",
            {"fields": ["cik", "name", "ticker", "exchange"], "data": [[1318605, "T", "TSLA"]]},
            "not a row of 4",
        ),
    ],
)
def test_a_file_not_of_the_lists_shape_is_refused_naming_the_problem(
    tmp_path: Path, name: str, body: dict[str, object], problem: str
) -> None:
    path = tmp_path / name
    path.write_text(json.dumps(body))
    with pytest.raises(MalformedFileError, match=problem):
        read_company_tickers(path)
