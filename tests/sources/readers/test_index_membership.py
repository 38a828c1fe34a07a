"""Index membership reader on the real S&P 500 files in tests/fixtures/index (values checked by
eye in the CSVs): interval list, change list, two constituents snapshots; plus hand-made files
for the index code and the pairing of changes."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from findata.contracts.landing import load_landing_format
from findata.sources.readers.coerce import DATE_DTYPE
from findata.sources.readers.errors import MalformedFileError
from findata.sources.readers.index_membership import read_index_membership

INDEX = Path(__file__).resolve().parents[2] / "fixtures" / "index"
START_END = INDEX / "sp500_ticker_start_end.csv"
CHANGES = INDEX / "sp500_changes_since_2019.csv"
SNAPSHOT_2026 = INDEX / "sp500_constituents_2026-08-08.csv"
SNAPSHOT_2024 = INDEX / "sp500_constituents_2024-09-29.csv"
NaT = pd.NaT


def intervals(frame: pd.DataFrame, ticker: str) -> list[tuple[str | None, str | None]]:
    rows = frame[frame["ticker"] == ticker]
    return [
        (
            None if pd.isna(a) else a.date().isoformat(),
            None if pd.isna(r) else r.date().isoformat(),
        )
        for a, r in zip(rows["added"], rows["removed"], strict=True)
    ]


def only(frame: pd.DataFrame, ticker: str) -> pd.Series:
    rows = frame[frame["ticker"] == ticker]
    assert len(rows) == 1
    return rows.iloc[0]


@pytest.mark.parametrize("path", [START_END, CHANGES, SNAPSHOT_2026, SNAPSHOT_2024])
def test_every_layout_gives_the_contract_columns_and_types(path: Path) -> None:
    frame = read_index_membership(path)
    assert list(frame.columns) == load_landing_format("index_membership").column_names
    assert (frame["index"] == "sp500").all()  # from the file name prefix
    assert frame["entity_id"].dtype == "Int64" and frame["entity_id"].isna().all()
    assert frame["added"].dtype == DATE_DTYPE
    assert frame["removed"].dtype == DATE_DTYPE
    for name in ("index", "ticker", "name", "cik"):
        assert frame[name].dtype == "string"
    assert frame.attrs["source_file"] == str(path)


# --- ticker,start_date,end_date ----------------------------------------------------------


def test_ticker_start_end_intervals() -> None:
    frame = read_index_membership(START_END)
    assert frame.attrs["layout"] == "ticker_start_end"
    assert len(frame) == 1230
    assert frame["removed"].isna().sum() == 503  # still members
    assert intervals(frame, "AAL") == [("1996-01-02", "1997-01-15"), ("2015-03-23", "2024-09-23")]
    assert intervals(frame, "AMD") == [("1996-01-02", "2013-09-23"), ("2017-03-20", None)]
    assert intervals(frame, "CTVA") == [("2019-06-03", None)]


# --- date,add,remove ---------------------------------------------------------------------


def test_changes_pair_additions_and_removals() -> None:
    frame = read_index_membership(CHANGES)
    assert frame.attrs["layout"] == "changes"
    assert len(frame) == 273
    assert frame["added"].isna().sum() == 127  # removed before the file's coverage
    assert frame["removed"].isna().sum() == 125  # still members
    # AAL joined before 2019 and left on 2024-09-23 with ERIE, DELL, PLTR coming in
    assert intervals(frame, "AAL") == [(None, "2024-09-23")]
    assert intervals(frame, "PLTR") == [("2024-09-23", None)]
    # a quoted cell with two tickers gives two rows, one per ticker
    assert intervals(frame, "CTVA") == [("2019-06-03", None)]
    assert intervals(frame, "DD") == [("2019-06-03", None)]
    assert intervals(frame, "FLR") == [(None, "2019-06-03")]
    assert intervals(frame, "DWDP") == [(None, "2019-06-03")]
    # re-added: PCG left on 2019-01-18 and came back on 2022-10-03
    assert intervals(frame, "PCG") == [(None, "2019-01-18"), ("2022-10-03", None)]
    # a ticker change written as add+remove, and later the old ticker back again
    assert intervals(frame, "FI") == [("2023-06-07", "2025-11-11")]
    assert intervals(frame, "FISV") == [(None, "2023-06-07"), ("2025-11-11", None)]
    # empty cells: AMTM added alone on 2024-09-30, removed on 2024-12-23
    assert intervals(frame, "AMTM") == [("2024-09-30", "2024-12-23")]
    assert intervals(frame, "BBWI") == [("2021-08-03", "2024-10-01")]


def test_changes_file_errors_name_the_line(tmp_path: Path) -> None:
    twice = tmp_path / "sp500_changes.csv"
    twice.write_text('date,add,remove\n2020-01-02,"AAA",""\n2020-02-03,"AAA,BBB",""\n')
    with pytest.raises(MalformedFileError) as caught:
        read_index_membership(twice)
    message = str(caught.value)
    assert "ticker AAA added on 2020-02-03 while a member since 2020-01-02" in message
    assert "line 2: date='2020-01-02'" in message and "line 3: date='2020-02-03'" in message

    removed_twice = tmp_path / "sp500_removals.csv"
    removed_twice.write_text('date,add,remove\n2020-01-02,"","AAA"\n2020-02-03,"","AAA"\n')
    with pytest.raises(MalformedFileError, match="removed on 2020-02-03 while not a member"):
        read_index_membership(removed_twice)

    same_day = tmp_path / "sp500_same_day.csv"
    same_day.write_text('date,add,remove\n2020-01-02,"AAA","AAA"\n')
    with pytest.raises(MalformedFileError, match="both added and removed on 2020-01-02"):
        read_index_membership(same_day)

    bad_date = tmp_path / "sp500_bad_date.csv"
    bad_date.write_text('date,add,remove\n2020-01-02,"AAA",""\n2023-02-30,"","AAA"\n')
    with pytest.raises(MalformedFileError, match=r"line 3: date='2023-02-30'"):
        read_index_membership(bad_date)

    extra = tmp_path / "sp500_extra.csv"
    extra.write_text('date,add,remove,reason\n2020-01-02,"AAA","",cap\n')
    with pytest.raises(MalformedFileError, match=r"unknown column.*reason"):
        read_index_membership(extra)


def test_changes_file_out_of_date_order_is_paired_by_date(tmp_path: Path) -> None:
    path = tmp_path / "djia_changes.csv"
    path.write_text('date,add,remove\n2021-05-03,"","AAA"\n2020-01-02,"AAA",""\n')
    frame = read_index_membership(path)
    assert (frame["index"] == "djia").all()
    assert intervals(frame, "AAA") == [("2020-01-02", "2021-05-03")]


# --- constituents snapshots --------------------------------------------------------------


def test_snapshot_every_row_a_current_member() -> None:
    frame = read_index_membership(SNAPSHOT_2026)
    assert frame.attrs["layout"] == "constituents_snapshot"
    assert len(frame) == 503
    assert frame["ticker"].is_unique
    assert frame["removed"].isna().all()
    assert frame["added"].notna().all()  # every Date added in this file is a real date
    # founding members: the index's 1957-03-04 start stands for "since the beginning"
    assert (frame["added"] == pd.Timestamp("1957-03-04")).sum() == 52
    mmm = only(frame, "MMM")
    assert (mmm["name"], mmm["cik"], mmm["added"]) == (
        "3M",
        "0000066740",
        pd.Timestamp("1957-03-04"),
    )
    zts = only(frame, "ZTS")
    assert (zts["name"], zts["cik"], zts["added"]) == (
        "Zoetis",
        "0001555280",
        pd.Timestamp("2013-06-21"),
    )


def test_snapshot_share_classes_share_one_cik() -> None:
    frame = read_index_membership(SNAPSHOT_2026)
    googl, goog = only(frame, "GOOGL"), only(frame, "GOOG")
    assert googl["cik"] == goog["cik"] == "0001652044"
    assert (googl["name"], googl["added"]) == (
        "Alphabet Inc. (Class A)",
        pd.Timestamp("2006-04-03"),
    )
    assert (goog["name"], goog["added"]) == ("Alphabet Inc. (Class C)", pd.Timestamp("2014-04-03"))
    assert only(frame, "FOXA")["cik"] == only(frame, "FOX")["cik"] == "0001754301"
    assert only(frame, "BF.B")["name"] == "Brown–Forman"  # UTF-8 en dash kept
    assert only(frame, "BRK.B")["cik"] == "0001067983"


def test_older_snapshot_has_goog_dates_the_other_way_round() -> None:
    # the 2024 snapshot gives GOOGL/GOOG each other's Date added (corrected by 2026):
    # read as published, not repaired
    frame = read_index_membership(SNAPSHOT_2024)
    assert len(frame) == 503
    assert only(frame, "GOOGL")["added"] == pd.Timestamp("2014-04-03")
    assert only(frame, "GOOG")["added"] == pd.Timestamp("2006-04-03")
    assert only(frame, "BK")["name"] == "BNY Mellon"  # before the BK → BNY ticker change
    assert "BNY" not in set(frame["ticker"])


SNAPSHOT_HEADER = (
    "Symbol,Security,GICS Sector,GICS Sub-Industry,Headquarters Location,Date added,CIK,Founded"
)


def test_snapshot_blank_date_added_is_unknown_and_odd_date_rejected(tmp_path: Path) -> None:
    blank = tmp_path / "sp500_constituents_old.csv"
    blank.write_text(
        f"{SNAPSHOT_HEADER}\n"
        'MMM,3M,Industrials,Industrial Conglomerates,"Saint Paul, Minnesota",'
        "1957-03-04,66740,1902\n"
        'ABT,Abbott Laboratories,Health Care,Health Care Equipment,"North Chicago, Illinois",'
        ",1800,1888\n",
        encoding="utf-8",
    )
    frame = read_index_membership(blank)
    assert frame["added"].isna().tolist() == [False, True]

    odd = tmp_path / "sp500_constituents_odd.csv"
    odd.write_text(
        f"{SNAPSHOT_HEADER}\n"
        'ABT,Abbott Laboratories,Health Care,Health Care Equipment,"North Chicago, Illinois",'
        "1964-03-31 (1957-03-04),1800,1888\n",
        encoding="utf-8",
    )
    with pytest.raises(MalformedFileError) as caught:
        read_index_membership(odd)
    assert "line 2: added='1964-03-31 (1957-03-04)'" in str(caught.value)


def test_snapshot_bad_cik_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "sp500_constituents_bad.csv"
    path.write_text(
        f"{SNAPSHOT_HEADER}\n"
        "MMM,3M,Industrials,Industrial Conglomerates,St Paul,1957-03-04,CIK66740,1902\n",
        encoding="utf-8",
    )
    with pytest.raises(
        MalformedFileError, match=r"column cik must match .* line 2: cik='CIK66740'"
    ):
        read_index_membership(path)


# --- the index code ----------------------------------------------------------------------


def test_index_code_from_argument_then_file_name_then_column(tmp_path: Path) -> None:
    plain = tmp_path / "members.csv"
    plain.write_text("ticker,start_date,end_date\nAAA,2020-01-02,\n")
    assert read_index_membership(plain, "ndx100")["index"].tolist() == ["ndx100"]

    with pytest.raises(MalformedFileError, match="no index code"):
        read_index_membership(plain)

    with pytest.raises(ValueError, match="unknown index 'nasdaq'"):
        read_index_membership(plain, "nasdaq")

    named = tmp_path / "djia_members.csv"
    named.write_text("ticker,start_date,end_date\nAAA,2020-01-02,\n")
    assert read_index_membership(named)["index"].tolist() == ["djia"]
    assert read_index_membership(named, "sp500")["index"].tolist() == ["sp500"]

    own = tmp_path / "index_membership.csv"
    own.write_text(
        "index,entity_id,ticker,added,removed\n"
        "sp500,12,AAA,2020-01-02,2021-03-01\ndjia,12,AAA,2020-06-01,\n"
    )
    frame = read_index_membership(own)
    assert frame.attrs["layout"] == "findata"
    assert frame["index"].tolist() == ["sp500", "djia"]
    assert frame["entity_id"].tolist() == [12, 12]


def test_index_column_must_agree_with_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / "sp500_members.csv"
    path.write_text(
        "index,entity_id,ticker,added,removed\nsp500,1,AAA,2020-01-02,\ndjia,2,BBB,2020-01-02,\n"
    )
    with pytest.raises(MalformedFileError) as caught:
        read_index_membership(path)
    assert "column index disagrees with 'sp500'" in str(caught.value)
    assert "line 3: index='djia'" in str(caught.value)


def test_unknown_index_code_in_a_column_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "membership.csv"
    path.write_text("index,entity_id,ticker,added,removed\nSP500,1,AAA,2020-01-02,\n")
    with pytest.raises(
        MalformedFileError, match=r"must be one of sp500, djia, ndx100.*line 2: index='SP500'"
    ):
        read_index_membership(path)
