"""Corporate actions reader on a small hand-made file: AAPL's 2014 7-for-1 split and a
dividend, with the values of the real Quandl sample (tests/fixtures/prices)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from findata.contracts.landing import load_landing_format
from findata.sources.readers.coerce import DATE_DTYPE
from findata.sources.readers.corporate_actions import read_corporate_actions
from findata.sources.readers.errors import MalformedFileError

HEADER = "entity_id,ticker,action,ex_date,announced,ratio,amount"


def test_split_and_dividend(tmp_path: Path) -> None:
    path = tmp_path / "corporate_actions.csv"
    path.write_text(
        f"{HEADER}\n"
        "10,AAPL,split,2014-06-09,2014-04-23,7,\n"
        "10,AAPL,dividend,2014-08-07,2014-07-22,,0.47\n",
        encoding="utf-8",
    )
    frame = read_corporate_actions(path)
    assert list(frame.columns) == load_landing_format("corporate_actions").column_names
    assert frame["action"].tolist() == ["split", "dividend"]
    assert frame["ex_date"].dtype == DATE_DTYPE and frame["announced"].dtype == DATE_DTYPE
    assert frame["ex_date"].tolist() == [pd.Timestamp("2014-06-09"), pd.Timestamp("2014-08-07")]
    assert frame["ratio"].iloc[0] == 7.0 and math.isnan(frame["ratio"].iloc[1])
    assert frame["amount"].iloc[1] == 0.47 and math.isnan(frame["amount"].iloc[0])


def test_announced_after_ex_date_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "corporate_actions.csv"
    path.write_text(f"{HEADER}\n10,AAPL,dividend,2014-08-07,2014-08-08,,0.47\n", encoding="utf-8")
    with pytest.raises(MalformedFileError) as caught:
        read_corporate_actions(path)
    message = str(caught.value)
    assert "announced > ex_date" in message and "[rule: ordered]" in message
    assert "line 2: announced='2014-08-08', ex_date='2014-08-07'" in message


def test_dividend_without_amount_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "corporate_actions.csv"
    path.write_text(f"{HEADER}\n10,AAPL,dividend,2014-08-07,2014-07-22,,\n", encoding="utf-8")
    with pytest.raises(
        MalformedFileError, match=r"amount must have a value when action is dividend"
    ):
        read_corporate_actions(path)
