"""Price reader on the real Quandl WIKI sample (values checked by eye in the CSV) and on the
vega-datasets monthly file, which is not a price layout findata accepts."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from findata.contracts.landing import load_landing_format
from findata.sources.readers.coerce import DATE_DTYPE
from findata.sources.readers.errors import MalformedFileError
from findata.sources.readers.prices import read_prices

PRICES = Path(__file__).resolve().parents[2] / "fixtures" / "prices"
QUANDL = PRICES / "QUANDL_SAMPLE_TABLE.csv"
VEGA = PRICES / "vega-datasets_stocks.csv"


@pytest.fixture(scope="module")
def quandl() -> pd.DataFrame:
    return read_prices(QUANDL)


def row(frame: pd.DataFrame, ticker: str, day: str) -> pd.Series:
    rows = frame[(frame["ticker"] == ticker) & (frame["date"] == pd.Timestamp(day))]
    assert len(rows) == 1
    return rows.iloc[0]


def test_quandl_layout_shape_and_types(quandl: pd.DataFrame) -> None:
    assert quandl.attrs["layout"] == "quandl_wiki"
    assert quandl.attrs["source_file"] == str(QUANDL)
    assert list(quandl.columns) == load_landing_format("prices").column_names
    assert len(quandl) == 916
    assert quandl["ticker"].value_counts().to_dict() == {
        "AAPL": 252,
        "BRK_A": 252,
        "MSFT": 252,
        "ZEN": 160,
    }
    assert quandl["entity_id"].dtype == "Int64"
    assert quandl["entity_id"].isna().all()  # tickers only
    assert quandl["ticker"].dtype == "string"
    assert quandl["date"].dtype == DATE_DTYPE
    for name in ("open", "high", "low", "close", "volume", "dividend", "split_ratio"):
        assert quandl[name].dtype == "float64"
    assert quandl["shares_outstanding"].isna().all()  # Quandl has none


def test_first_row_volume_written_as_float(quandl: pd.DataFrame) -> None:
    first = quandl.iloc[0]
    assert first["ticker"] == "AAPL"
    assert first["date"] == pd.Timestamp("2014-01-02")
    assert (first["open"], first["high"], first["low"], first["close"]) == (
        555.68,
        557.03,
        552.021,
        553.13,
    )
    assert first["volume"] == 8381600.0


def test_aapl_seven_for_one_split(quandl: pd.DataFrame) -> None:
    before = row(quandl, "AAPL", "2014-06-06")
    split = row(quandl, "AAPL", "2014-06-09")
    assert before["close"] == 645.57
    assert before["split_ratio"] == 1.0
    assert split["split_ratio"] == 7.0
    assert (split["open"], split["high"], split["low"], split["close"]) == (
        92.7,
        93.88,
        91.75,
        93.7,
    )
    assert split["volume"] == 75414997.0
    assert split["dividend"] == 0.0
    # the only split in the sample
    assert (quandl["split_ratio"] != 1.0).sum() == 1


def test_ex_dividend_values(quandl: pd.DataFrame) -> None:
    paid = quandl[quandl["dividend"] > 0]
    got = {(t, d.date().isoformat(), v) for t, d, v in paid[["ticker", "date", "dividend"]].values}
    assert got == {
        ("AAPL", "2014-02-06", 3.05),
        ("AAPL", "2014-05-08", 3.29),
        ("AAPL", "2014-08-07", 0.47),
        ("AAPL", "2014-11-06", 0.47),
        ("MSFT", "2014-02-18", 0.28),
        ("MSFT", "2014-05-13", 0.28),
        ("MSFT", "2014-08-19", 0.28),
        ("MSFT", "2014-11-18", 0.31),
    }


def test_brk_a_ticker_kept_as_written(quandl: pd.DataFrame) -> None:
    brk = row(quandl, "BRK_A", "2014-01-02")
    assert (brk["open"], brk["close"], brk["volume"]) == (177500.0, 176320.0, 300.0)
    assert "BRK.A" not in set(quandl["ticker"])


def test_zen_listed_mid_year(quandl: pd.DataFrame) -> None:
    zen = quandl[quandl["ticker"] == "ZEN"]
    assert len(zen) == 160
    assert zen["date"].min() == pd.Timestamp("2014-05-15")
    assert zen["date"].max() == pd.Timestamp("2014-12-31")


def test_prices_respect_the_ordered_chains(quandl: pd.DataFrame) -> None:
    assert (quandl["low"] <= quandl["open"]).all() and (quandl["open"] <= quandl["high"]).all()
    assert (quandl["low"] <= quandl["close"]).all() and (quandl["close"] <= quandl["high"]).all()
    assert not math.isnan(quandl["volume"].sum())


def test_vega_monthly_file_is_rejected_naming_missing_columns() -> None:
    with pytest.raises(MalformedFileError) as caught:
        read_prices(VEGA)
    message = str(caught.value)
    assert message.startswith(str(VEGA))
    assert (
        "missing required column(s): entity_id, ticker, open, high, low, close, volume" in message
    )
    assert "unknown column(s): symbol, price" in message
    assert "quandl_wiki" in message  # says which layouts would have been accepted


def test_quandl_file_with_a_corrupted_row_is_rejected(tmp_path: Path) -> None:
    lines = QUANDL.read_text(encoding="utf-8").splitlines(keepends=True)
    # line 110 is AAPL 2014-06-09; make its low exceed its open
    assert lines[109].startswith("AAPL,2014-06-09,92.7,93.88,91.75,")
    lines[109] = lines[109].replace(",91.75,", ",92.75,", 1)
    bad = tmp_path / "QUANDL_SAMPLE_TABLE.csv"
    bad.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(MalformedFileError) as caught:
        read_prices(bad)
    assert "line 110: low='92.75', open='92.7'" in str(caught.value)


def test_quandl_file_with_a_ticker_twice_on_one_date_is_rejected(tmp_path: Path) -> None:
    # the Quandl layout has no entity_id, so its own key (ticker, date) is checked
    lines = QUANDL.read_text(encoding="utf-8").splitlines(keepends=True)
    bad = tmp_path / "QUANDL_SAMPLE_TABLE.csv"
    bad.write_text("".join([*lines, lines[109]]), encoding="utf-8")
    with pytest.raises(MalformedFileError) as caught:
        read_prices(bad)
    message = str(caught.value)
    assert "key (ticker, date) must be unique" in message
    assert "line 110" in message and f"line {len(lines) + 1}" in message
