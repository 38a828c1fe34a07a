"""The contract-driven landing CSV reader, on small hand-made files in the project's layout:
one test per rule, each checking that the error names the file, line, column, value and rule."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from findata.contracts.landing import load_landing_format
from findata.sources.readers import landing_csv
from findata.sources.readers.coerce import DATE_DTYPE
from findata.sources.readers.errors import MalformedFileError
from findata.sources.readers.landing_csv import PROJECT_LAYOUT, read_landing_csv

PRICES_HEADER = "entity_id,ticker,date,open,high,low,close,volume"
GOOD_PRICES = (
    f"{PRICES_HEADER}\n"
    "1,AAA,2023-02-27,10.0,11.0,9.5,10.5,1000\n"
    "1,AAA,2023-02-28,10.5,11.5,10.0,11.0,1200\n"
    "2,BBB,2023-02-28,20,21,19,20.5,8381600.0\n"
)
ACTIONS_HEADER = "entity_id,ticker,action,ex_date,announced,ratio,amount"
MASTER_HEADER = (
    "entity_id,entity_grain,issuer_entity_id,issuer_name,cik,figi,ticker,exchange,"
    "instrument_type,country,valid_from,valid_to"
)


def write(tmp_path: Path, text: str, name: str = "landing.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def rejection(path: Path, format_name: str) -> str:
    """The message of the MalformedFileError reading ``path`` raises (it must raise)."""
    with pytest.raises(MalformedFileError) as caught:
        read_landing_csv(path, format_name)
    message = str(caught.value)
    assert caught.value.path == str(path)
    assert message.startswith(str(path))
    return message


# --- good input --------------------------------------------------------------------------


def test_good_prices_are_typed_in_contract_order(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD_PRICES)
    frame = read_landing_csv(path, "prices")

    assert list(frame.columns) == load_landing_format("prices").column_names
    assert frame.attrs == {"layout": PROJECT_LAYOUT, "source_file": str(path)}
    assert frame["entity_id"].dtype == "Int64"
    assert frame["ticker"].dtype == "string"
    assert frame["date"].dtype == DATE_DTYPE
    for name in ("open", "high", "low", "close", "volume"):
        assert frame[name].dtype == "float64"
    assert frame["entity_id"].tolist() == [1, 1, 2]
    assert frame["date"].tolist() == [
        pd.Timestamp("2023-02-27"),
        pd.Timestamp("2023-02-28"),
        pd.Timestamp("2023-02-28"),
    ]
    assert frame["volume"].tolist() == [1000.0, 1200.0, 8381600.0]  # "8381600.0" accepted
    assert frame["open"].tolist() == [10.0, 10.5, 20.0]
    # optional columns the file does not have: all null, typed
    for name in ("shares_outstanding", "dividend", "split_ratio"):
        assert frame[name].dtype == "float64"
        assert frame[name].isna().all()


def test_text_is_never_guessed_and_is_stripped(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"{PRICES_HEADER}\n"
        "7,007,2023-02-27,1,1,1,1,0\n"
        "8,  TRUE ,2023-02-27,1,1,1,1,0\n"
        '9,"NaN",2023-02-27,1,1,1,1,0\n'
        '10,"A,B",2023-02-27, 2.5 ,3,2,2.5,1e3\n',
    )
    frame = read_landing_csv(path, "prices")
    assert frame["ticker"].tolist() == ["007", "TRUE", "NaN", "A,B"]
    assert frame["open"].tolist() == [1.0, 1.0, 1.0, 2.5]
    assert frame["volume"].tolist()[-1] == 1000.0


@pytest.mark.parametrize("ending", ["\n", "", "\r\n\r\n"])
def test_header_only_gives_zero_typed_rows(tmp_path: Path, ending: str) -> None:
    frame = read_landing_csv(write(tmp_path, f"{PRICES_HEADER}{ending}"), "prices")
    assert len(frame) == 0
    assert list(frame.columns) == load_landing_format("prices").column_names
    assert frame["entity_id"].dtype == "Int64"
    assert frame["date"].dtype == DATE_DTYPE
    assert frame["volume"].dtype == "float64"
    assert frame["ticker"].dtype == "string"


def test_optional_values_may_be_empty(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"{ACTIONS_HEADER}\n"
        "1,AAPL,split,2014-06-09,2014-04-23,7,\n"
        "1,AAPL,dividend,2014-08-07,2014-07-22,,0.47\n",
    )
    frame = read_landing_csv(path, "corporate_actions")
    assert frame["ratio"].tolist()[0] == 7.0
    assert np.isnan(frame["ratio"].tolist()[1])
    assert frame["amount"].tolist()[1] == 0.47
    assert frame["action"].tolist() == ["split", "dividend"]


def test_blank_lines_are_skipped_and_counted_in_line_numbers(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"{PRICES_HEADER}\n1,AAA,2023-02-27,10,11,9,10,1000\n\n1,AAA,2023-02-28,10,11,9,10,-5\n",
    )
    message = rejection(path, "prices")
    assert "line 4: volume='-5'" in message


def test_line_breaks_inside_quoted_values_keep_line_numbers_right(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f'{PRICES_HEADER}\n1,"AA\nA",2023-02-27,10,11,9,10,1000\n1,AAA,2023-02-28,10,11,9,10,-5\n',
    )
    message = rejection(path, "prices")
    assert "line 4: volume='-5'" in message


# --- file-level problems -----------------------------------------------------------------


def test_empty_file_is_rejected(tmp_path: Path) -> None:
    assert "empty file" in rejection(write(tmp_path, ""), "prices")


def test_header_not_on_line_one_is_rejected(tmp_path: Path) -> None:
    message = rejection(write(tmp_path, f"\n{PRICES_HEADER}\n"), "prices")
    assert "line 1 (header) is blank" in message


def test_non_utf8_file_is_rejected_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes(
        f"{PRICES_HEADER}\n1,AAA,2023-02-27,1,1,1,1,0\n2,Soci\xe9t\xe9,2023-02-27,1,1,1,1,0\n".encode(
            "latin-1"
        )
    )
    message = rejection(path, "prices")
    assert "line 3: not valid utf-8" in message
    assert "xe9" in message


def test_ragged_row_is_rejected(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"{PRICES_HEADER}\n1,AAA,2023-02-27,10,11,9,10,1000\n1,AAA,2023-02-28\n"
        "1,AAA,2023-03-01,10,11,9,10,1000,99\n",
    )
    message = rejection(path, "prices")
    assert "ragged rows: the header has 8 fields; 2 row(s) do not" in message
    assert "line 3 has 3 fields" in message
    assert "line 4 has 9 fields" in message


def test_duplicate_header_names_are_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, f"{PRICES_HEADER},date\n")
    assert "line 1 (header): duplicate column(s) date" in rejection(path, "prices")


# --- header rules ------------------------------------------------------------------------


def test_missing_column_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "entity_id,ticker,date,open,high,low,close\n1,AAA,2023-02-27,1,1,1,1\n")
    message = rejection(path, "prices")
    assert "line 1 (header): missing required column(s): volume" in message


def test_unknown_column_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, f"{PRICES_HEADER},vwap\n1,AAA,2023-02-27,1,1,1,1,0,1\n")
    message = rejection(path, "prices")
    assert "unknown column(s): vwap" in message
    assert "missing" not in message


def test_publisher_layout_drops_only_its_declared_columns(tmp_path: Path) -> None:
    header = (
        "ticker,date,open,high,low,close,volume,ex-dividend,split_ratio,"
        "adj_open,adj_high,adj_low,adj_close,adj_volume"
    )
    row = "AAA,2014-01-02,1,1,1,1,100.0,0.0,1.0,1,1,1,1,100.0"
    frame = read_landing_csv(write(tmp_path, f"{header}\n{row}\n"), "prices")
    assert frame.attrs["layout"] == "quandl_wiki"
    assert frame["entity_id"].isna().all()
    assert frame["dividend"].tolist() == [0.0]

    extra = write(tmp_path, f"{header},adj_factor\n{row},1\n", "extra.csv")
    assert "unknown column(s): adj_factor" in rejection(extra, "prices")


# --- value rules -------------------------------------------------------------------------


def test_bad_date_is_rejected(tmp_path: Path) -> None:
    path = write(
        tmp_path, f"{PRICES_HEADER}\n1,AAA,2023-02-28,10,11,9,10,1\n1,AAA,2023-02-30,10,11,9,10,1\n"
    )
    message = rejection(path, "prices")
    assert "column date must be a real YYYY-MM-DD date [rule: type date]" in message
    assert "line 3: date='2023-02-30'" in message


@pytest.mark.parametrize("text", ["2023-2-28", "28/02/2023", "Jan 1 2000", "20230228"])
def test_dates_must_be_iso(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, f"{PRICES_HEADER}\n1,AAA,{text},10,11,9,10,1\n")
    assert f"line 2: date='{text}'" in rejection(path, "prices")


@pytest.mark.parametrize("text", ["abc", "1,000", "nan", "inf", "0x10"])
def test_numbers_must_be_numbers(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, f'{PRICES_HEADER}\n1,AAA,2023-02-28,10,11,9,10,"{text}"\n')
    message = rejection(path, "prices")
    assert "column volume must be a number [rule: type number]" in message
    assert f"line 2: volume='{text}'" in message


@pytest.mark.parametrize("text", ["1.0", "0x10", "one"])
def test_integers_must_be_integers(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, f"{PRICES_HEADER}\n{text},AAA,2023-02-28,10,11,9,10,1\n")
    message = rejection(path, "prices")
    assert "column entity_id must be an integer [rule: type integer]" in message
    assert f"line 2: entity_id='{text}'" in message


def test_required_value_missing_is_rejected(tmp_path: Path) -> None:
    path = write(
        tmp_path, f"{PRICES_HEADER}\n1,AAA,2023-02-28,10,11,9,10,1\n2, ,2023-02-28,1,1,1,1,1\n"
    )
    message = rejection(path, "prices")
    assert "column ticker must have a value [rule: required]" in message
    assert "line 3: ticker=(empty)" in message


def test_negative_volume_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, f"{PRICES_HEADER}\n1,AAA,2023-02-28,10,11,9,10,-100\n")
    message = rejection(path, "prices")
    assert "column volume must be >= 0 [rule: min]" in message
    assert "line 2: volume='-100'" in message


def test_exclusive_min_rejects_zero_split_ratio(tmp_path: Path) -> None:
    path = write(tmp_path, f"{ACTIONS_HEADER}\n1,AAPL,split,2014-06-09,2014-04-23,0,\n")
    message = rejection(path, "corporate_actions")
    assert "column ratio must be > 0 [rule: exclusive_min]" in message
    assert "line 2: ratio='0'" in message


def test_low_above_open_is_rejected(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"{PRICES_HEADER}\n1,AAA,2023-02-27,10,11,9,10,1\n1,AAA,2023-02-28,10.5,11,10.6,11,1\n",
    )
    message = rejection(path, "prices")
    assert "low > open; low <= open <= high must be non-decreasing along the row" in message
    assert "[rule: ordered]" in message
    assert "line 3: low='10.6', open='10.5'" in message


def test_ordered_skips_nulls(tmp_path: Path) -> None:
    # an empty `removed` (still a member) is not compared with `added`
    path = write(
        tmp_path,
        "index,entity_id,ticker,added,removed\nsp500,1,AAA,2020-01-02,\nsp500,2,BBB,2020-01-02,2021-01-04\n",
    )
    frame = read_landing_csv(path, "index_membership")
    assert frame["removed"].isna().tolist() == [True, False]


def test_added_after_removed_is_rejected(tmp_path: Path) -> None:
    path = write(
        tmp_path, "index,entity_id,ticker,added,removed\nsp500,1,AAA,2021-01-04,2020-01-02\n"
    )
    message = rejection(path, "index_membership")
    assert "added > removed" in message
    assert "line 2: added='2021-01-04', removed='2020-01-02'" in message


def test_duplicate_key_is_rejected(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"{PRICES_HEADER}\n1,AAA,2023-02-27,10,11,9,10,1\n2,BBB,2023-02-27,10,11,9,10,1\n"
        "1,AAA,2023-02-27,10,11,9,10,2\n",
    )
    message = rejection(path, "prices")
    assert "key (entity_id, date) must be unique [rule: key]" in message
    assert "2 offending row(s)" in message
    assert "line 2: entity_id='1', date='2023-02-27'" in message
    assert "line 4: entity_id='1', date='2023-02-27'" in message


def test_null_key_part_is_allowed_only_where_the_layout_cannot_fill_it(tmp_path: Path) -> None:
    path = write(tmp_path, f"{PRICES_HEADER}\n,AAA,2023-02-27,10,11,9,10,1\n")
    message = rejection(path, "prices")
    assert "column entity_id must have a value [rule: required]" in message
    assert "line 2: entity_id=(empty)" in message


def test_split_without_ratio_is_rejected(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"{ACTIONS_HEADER}\n1,AAPL,dividend,2014-08-07,2014-07-22,,0.47\n"
        "1,AAPL,split,2014-06-09,2014-04-23,,\n",
    )
    message = rejection(path, "corporate_actions")
    assert "column ratio must have a value when action is split [rule: required_when]" in message
    assert "line 3: action='split', ratio=(empty)" in message


def test_bad_enum_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, f"{ACTIONS_HEADER}\n1,AAPL,merger,2014-06-09,2014-04-23,,\n")
    message = rejection(path, "corporate_actions")
    assert "column action must be one of split, dividend [rule: allowed]" in message
    assert "line 2: action='merger'" in message


def test_bad_cik_pattern_is_rejected(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"{MASTER_HEADER}\n"
        "1,security,1,Apple Inc.,320193,BBG000B9XRY4,AAPL,XNAS,common,US,1980-12-12,\n"
        "2,security,2,Bad Corp,CIK0000012,BBG000B9XRY5,BAD,XNYS,common,US,1990-01-02,\n",
    )
    message = rejection(path, "security_master")
    assert "column cik must match ^[0-9]{1,10}$ [rule: pattern]" in message
    assert "line 3: cik='CIK0000012'" in message


def test_only_the_first_few_offending_rows_are_shown(tmp_path: Path) -> None:
    rows = "".join(f"1,AAA,2023-03-{day:02d},10,11,9,10,-1\n" for day in range(1, 9))
    message = rejection(write(tmp_path, f"{PRICES_HEADER}\n{rows}"), "prices")
    assert "8 offending row(s) (first 5 shown)" in message
    assert "line 6:" in message
    assert "line 7:" not in message


def test_rules_come_from_the_contract(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tighten one rule in the contract object: the reader follows it, nothing is hard-coded."""
    contract = load_landing_format("prices")
    stricter = contract.model_copy(
        update={
            "columns": [
                c.model_copy(update={"min": 1500.0}) if c.name == "volume" else c
                for c in contract.columns
            ]
        }
    )
    monkeypatch.setattr(landing_csv, "load_landing_format", lambda name: stricter)
    message = rejection(write(tmp_path, GOOD_PRICES), "prices")
    assert "column volume must be >= 1500 [rule: min]" in message
    assert "line 2: volume='1000'" in message
