"""read_companyfacts on the real Alphabet and Marvell companyfacts files."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from findata.sources.readers.errors import MalformedFileError
from findata.sources.readers.sec_companyfacts import COMPANYFACTS_DTYPES, read_companyfacts

FIXTURES = Path(__file__).parents[2] / "fixtures" / "xbrl-json" / "companyfacts"
ALPHABET = FIXTURES / "CIK0001652044.json"
MARVELL = FIXTURES / "CIK0001835632.json"

ALL_FILES = (
    ALPHABET,
    MARVELL,
)


@pytest.fixture(scope="module")
def alphabet() -> pd.DataFrame:
    return read_companyfacts(ALPHABET)


@pytest.fixture(scope="module")
def marvell() -> pd.DataFrame:
    return read_companyfacts(MARVELL)


def _facts(frame: pd.DataFrame, tag: str, end: str, start: str | None = None) -> pd.DataFrame:
    rows = frame[(frame["tag"] == tag) & (frame["end"] == pd.Timestamp(end))]
    if start is None:
        return rows[rows["start"].isna()]
    return rows[rows["start"] == pd.Timestamp(start)]


def _count_facts_in_json(path: Path) -> int:
    document = json.loads(path.read_text(encoding="utf-8"))
    return sum(
        len(facts)
        for tags in document["facts"].values()
        for concept in tags.values()
        for facts in concept["units"].values()
    )


@pytest.mark.parametrize("path", [ALPHABET, MARVELL], ids=lambda p: p.name)
def test_one_row_per_fact_with_declared_dtypes(path: Path) -> None:
    frame = read_companyfacts(path)
    assert len(frame) == _count_facts_in_json(path)
    assert {name: str(dtype) for name, dtype in frame.dtypes.items()} == {
        name: (str(pd.StringDtype()) if dtype == "string" else dtype)
        for name, dtype in COMPANYFACTS_DTYPES.items()
    }
    for column in ("cik", "taxonomy", "tag", "unit", "end", "value", "accession", "form", "filed"):
        assert frame[column].notna().all(), column


def test_marvell_counts_and_identity(marvell: pd.DataFrame) -> None:
    assert len(marvell) == 8053
    assert set(marvell["cik"]) == {"0001835632"}
    assert set(marvell["entity_name"]) == {"MARVELL TECHNOLOGY, INC"}
    assert set(marvell["taxonomy"]) == {"dei", "us-gaap", "srt", "ffd", "ecd"}


def test_marvell_shares_outstanding_fact(marvell: pd.DataFrame) -> None:
    (row,) = _facts(marvell, "EntityCommonStockSharesOutstanding", "2021-06-02").itertuples()
    assert row.taxonomy == "dei"
    assert row.label == "Entity Common Stock, Shares Outstanding"
    assert row.unit == "shares"
    assert pd.isna(row.start)  # an instant fact
    assert row.value == 819500000.0
    assert row.accession == "0001835632-21-000010"
    # fy/fp are the filing's (fiscal 2022 Q1 10-Q), not the calendar of the fact
    assert row.fy == 2022
    assert row.fp == "Q1"
    assert row.form == "10-Q"
    assert row.filed == pd.Timestamp("2021-06-09")
    assert row.frame == "CY2021Q2I"


def test_marvell_duration_fact_reported_with_the_filings_fiscal_year(
    marvell: pd.DataFrame,
) -> None:
    rows = _facts(
        marvell, "RevenueFromContractWithCustomerExcludingAssessedTax", "2020-05-02", "2020-02-02"
    )
    (row,) = rows.itertuples()
    assert row.value == 693641000.0
    assert row.unit == "USD"
    assert row.accession == "0001835632-21-000010"
    assert (row.fy, row.fp, row.form) == (2022, "Q1", "10-Q")  # the quarter is fiscal 2021
    assert row.filed == pd.Timestamp("2021-06-09")
    assert row.frame == "CY2020Q1"


def test_alphabet_counts_and_taxonomies(alphabet: pd.DataFrame) -> None:
    assert len(alphabet) == 20324
    assert set(alphabet["cik"]) == {"0001652044"}
    assert set(alphabet["entity_name"]) == {"ALPHABET INC."}
    assert set(alphabet["taxonomy"]) == {"dei", "us-gaap", "ecd", "ffd"}
    # companyfacts leaves out dimensional facts: dei has only the public float
    assert set(alphabet.loc[alphabet["taxonomy"] == "dei", "tag"]) == {"EntityPublicFloat"}


def test_alphabet_eps_fact_with_and_without_frame(alphabet: pd.DataFrame) -> None:
    (annual,) = _facts(alphabet, "EarningsPerShareDiluted", "2025-12-31", "2025-01-01").itertuples()
    assert annual.unit == "USD/shares"
    assert annual.value == 10.81
    assert annual.accession == "0001652044-26-000018"
    assert (annual.fy, annual.fp, annual.form) == (2025, "FY", "10-K")
    assert annual.filed == pd.Timestamp("2026-02-05")
    assert annual.frame == "CY2025"

    (half,) = _facts(alphabet, "EarningsPerShareDiluted", "2025-06-30", "2025-01-01").itertuples()
    assert half.value == 5.12
    assert half.accession == "0001652044-25-000062"
    assert pd.isna(half.frame)  # no "frame" key in the JSON


def test_alphabet_restated_fact_keeps_both_reports(alphabet: pd.DataFrame) -> None:
    rows = _facts(alphabet, "AccruedLiabilitiesCurrent", "2021-12-31")
    # the FY2021 10-K, three FY2022 10-Qs, then the FY2022 10-K with a different value
    assert len(rows) == 5
    assert rows["value"].tolist() == [31236000000.0] * 4 + [32044000000.0]
    first = rows.iloc[0]
    assert first["accession"] == "0001652044-22-000019"
    assert first["filed"] == pd.Timestamp("2022-02-02")
    assert (first["fy"], first["fp"], first["form"]) == (2021, "FY", "10-K")
    assert pd.isna(first["frame"])
    restated = rows.iloc[-1]
    assert restated["accession"] == "0001652044-23-000016"
    assert restated["filed"] == pd.Timestamp("2023-02-03")
    assert (restated["fy"], restated["fp"], restated["form"]) == (2022, "FY", "10-K")
    assert restated["frame"] == "CY2021Q4I"


def test_proxy_facts_have_no_fiscal_year(alphabet: pd.DataFrame) -> None:
    rows = _facts(alphabet, "NetIncomeLoss", "2021-12-31", "2021-01-01")
    proxy = rows[rows["form"] == "DEF 14A"]
    assert len(proxy) == 1
    assert proxy["value"].iloc[0] == 76033000000.0
    assert proxy["accession"].iloc[0] == "0001308179-26-000342"
    assert pd.isna(proxy["fy"].iloc[0]) and pd.isna(proxy["fp"].iloc[0])
    assert alphabet["fy"].isna().sum() == 82


def test_null_label_is_kept_as_null(alphabet: pd.DataFrame) -> None:
    rows = alphabet[alphabet["tag"] == "EffectiveIncomeTaxRateReconciliationFdiiPercent"]
    assert len(rows) > 0
    assert rows["label"].isna().all()
    assert rows["unit"].iloc[0] == "pure"


def test_three_megabyte_file_reads_quickly() -> None:
    started = time.perf_counter()
    read_companyfacts(ALPHABET)
    assert time.perf_counter() - started < 3.0


# ---- malformed input -------------------------------------------------------------------


def _marvell() -> dict[str, Any]:
    return json.loads(MARVELL.read_text(encoding="utf-8"))


def _write(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "CIK0001835632.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _first_fact(document: dict[str, Any]) -> dict[str, Any]:
    return document["facts"]["dei"]["EntityCommonStockSharesOutstanding"]["units"]["shares"][0]


def test_not_json(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_bytes(MARVELL.read_bytes()[:5000])
    with pytest.raises(MalformedFileError, match="not JSON") as caught:
        read_companyfacts(path)
    assert caught.value.path == str(path)


def test_missing_facts(tmp_path: Path) -> None:
    document = _marvell()
    del document["facts"]
    with pytest.raises(MalformedFileError, match="missing required key 'facts'"):
        read_companyfacts(_write(tmp_path, document))


def test_cik_not_digits(tmp_path: Path) -> None:
    document = _marvell()
    document["cik"] = "MRVL"
    with pytest.raises(MalformedFileError, match="cik is not a CIK"):
        read_companyfacts(_write(tmp_path, document))


def test_value_not_a_number_names_the_fact(tmp_path: Path) -> None:
    document = _marvell()
    _first_fact(document)["val"] = "819500000"
    where = r"facts\.dei\.EntityCommonStockSharesOutstanding\.units\.shares\[0\]\.val"
    with pytest.raises(MalformedFileError, match=where):
        read_companyfacts(_write(tmp_path, document))


def test_bad_end_date(tmp_path: Path) -> None:
    document = _marvell()
    _first_fact(document)["end"] = "06/02/2021"
    with pytest.raises(MalformedFileError, match=r"\.end is not a date: '06/02/2021'"):
        read_companyfacts(_write(tmp_path, document))


def test_missing_accession(tmp_path: Path) -> None:
    document = _marvell()
    del _first_fact(document)["accn"]
    with pytest.raises(MalformedFileError, match=r"shares\[0\]\.accn"):
        read_companyfacts(_write(tmp_path, document))


def test_empty_facts_give_an_empty_typed_frame(tmp_path: Path) -> None:
    frame = read_companyfacts(_write(tmp_path, {"cik": 1835632, "entityName": "X", "facts": {}}))
    assert frame.empty
    assert list(frame.columns) == list(COMPANYFACTS_DTYPES)
    assert str(frame["value"].dtype) == "float64"
    assert str(frame["end"].dtype) == "datetime64[s]"
