"""13F-HR reader against the real filings in tests/fixtures/13f (values checked by eye)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd
import pytest
from lxml import etree

from findata.sources.readers.errors import MalformedFileError
from findata.sources.readers.form13f import (
    INFORMATION_TABLE_COLUMNS,
    MAX_PLAUSIBLE_MEDIAN_PRICE,
    CoverTotal,
    OtherManager,
    ValueUnit,
    decide_value_unit,
    median_implied_price,
    read_13f_cover,
    read_13f_filing,
    read_13f_information_table,
    read_13f_submission_text,
    reconcile_cover_total,
)

F13 = Path(__file__).resolve().parents[2] / "fixtures" / "13f"
BARD = F13 / "bard-financial-services_2021q3"
MFN = F13 / "mfn-partners_2025q4_13F-HR-A"
METLIFE = F13 / "metlife_2021q4"
LTS_TXT = F13 / "lts-one-management_2023q3" / "0001894188-23-000007.txt"
#: Bard's cover with its total off (tests/fixtures/CRAFTED.yaml), read with Bard's real table
COVER_TOTAL_OFF = F13.parent / "13f-crafted" / "bard-financial-services_2021q3-cover-total-off"

# --- Bard: pre-2023 filing in thousands, ns1: prefix on the table


def test_bard_cover() -> None:
    cover = read_13f_cover(BARD / "primary_doc.xml")
    assert cover.form_type == "13F-HR"
    assert cover.period == dt.date(2021, 9, 30)
    assert cover.manager_cik == "0001850858"
    assert cover.manager_name == "Bard Financial Services, Inc."
    assert cover.report_type == "13F HOLDINGS REPORT"
    assert cover.signature_date == dt.date(2021, 10, 15)
    assert (cover.table_entry_total, cover.table_value_total) == (278, 1129298)
    assert cover.amendment_number is None and cover.other_managers == ()
    assert cover.form13f_file_number == "028-21128"


def test_bard_information_table_with_ns1_prefix() -> None:
    table = read_13f_information_table(BARD / "infotable.xml")
    assert list(table.columns) == list(INFORMATION_TABLE_COLUMNS)
    assert dict(table.dtypes.astype(str)) == INFORMATION_TABLE_COLUMNS
    assert len(table) == 278
    assert table["line_number"].tolist() == list(range(1, 279))
    assert int(table["value_reported"].sum()) == 1129298
    first = table.iloc[0]
    assert (first["name_of_issuer"], first["cusip"], first["value_reported"], first["shares"]) == (
        "3M CO COM",
        "88579Y101",
        584,
        3326,
    )
    assert (first["voting_sole"], first["voting_shared"], first["voting_none"]) == (0, 0, 3326)
    assert first["other_manager"] == "0"
    assert pd.isna(first["figi"]) and pd.isna(first["put_call"])
    apple = table[table["cusip"] == "037833100"].iloc[0]
    # 86,787 thousand for 613,337 shares is $141.50 a share, Apple's price at 2021-09-30
    assert (apple["line_number"], apple["value_reported"], apple["shares"]) == (17, 86787, 613337)


def test_bard_filing_is_in_thousands() -> None:
    filing = read_13f_filing(BARD / "primary_doc.xml", BARD / "infotable.xml")
    assert filing.value_unit == "thousands"
    assert filing.filed is None and filing.accession is None
    assert int(filing.holdings["value_usd"].sum()) == 1_129_298_000
    assert filing.holdings["value_usd"].dtype == "Int64"
    assert filing.holdings["value_usd"].iloc[0] == 584_000
    # the rows tie out to the cover; rounding could explain up to $1,000 a row
    assert filing.cover_total == CoverTotal(difference_usd=0, ratio=0.0, tolerance_usd=278_000)
    assert filing.cover_total.status == "equal" and filing.entries_match_cover is True
    # a plausible median share price under the thousands reading
    assert median_implied_price(filing.holdings) == pytest.approx(81.4987, abs=1e-3)


def test_filed_argument_overrides_signature_date() -> None:
    filing = read_13f_filing(
        BARD / "primary_doc.xml",
        BARD / "infotable.xml",
        filed=dt.date(2023, 2, 1),
        accession="0001850858-23-000001",
    )
    assert filing.filed == dt.date(2023, 2, 1)
    assert filing.accession == "0001850858-23-000001"
    assert filing.value_unit == "dollars"
    assert int(filing.holdings["value_usd"].sum()) == 1_129_298


# --- MFN: 13F-HR/A, ns1: for the common namespace, default namespace + unused n1: on the table


def test_mfn_amendment_cover() -> None:
    cover = read_13f_cover(MFN / "primary_doc.xml")
    assert cover.form_type == "13F-HR/A"
    assert cover.is_amendment is True
    assert (cover.amendment_number, cover.amendment_type) == (1, "NEW HOLDINGS")
    assert cover.manager_cik == "0001732811"
    assert cover.manager_name == "MFN Partners Management, LP"
    assert cover.period == dt.date(2025, 12, 31)
    assert cover.signature_date == dt.date(2026, 4, 29)
    assert (cover.crd_number, cover.sec_file_number) == ("000291755", "801-112441")
    assert (cover.table_entry_total, cover.table_value_total) == (2, 24920000)


def test_mfn_filing_figi_on_one_row_and_dollars() -> None:
    filing = read_13f_filing(MFN / "primary_doc.xml", MFN / "infotable.xml")
    holdings = filing.holdings
    assert holdings["title_of_class"].tolist() == ["*W EXP 99/99/999", "ORD SHS CL A"]
    assert pd.isna(holdings["figi"].iloc[0])
    assert holdings["figi"].iloc[1] == "BBG01X0FFN50"
    assert holdings["value_reported"].tolist() == [320000, 24600000]
    assert holdings["shares"].tolist() == [400000, 2400000]
    assert holdings["other_manager"].isna().all()  # element absent
    assert filing.value_unit == "dollars"
    assert int(holdings["value_usd"].sum()) == 24_920_000
    assert filing.cover_total == CoverTotal(difference_usd=0, ratio=0.0, tolerance_usd=2)


# --- MetLife: combination report, late filing of a 2021 period, values in dollars


def test_metlife_combination_cover_with_other_managers() -> None:
    cover = read_13f_cover(METLIFE / "primary_doc.xml")
    assert cover.report_type == "13F COMBINATION REPORT"
    assert cover.manager_cik == "0001099219"
    assert cover.manager_name == "METLIFE INC"
    assert cover.period == dt.date(2021, 12, 31)
    assert cover.signature_date == dt.date(2023, 3, 22)
    assert cover.is_amendment is False
    assert (cover.table_entry_total, cover.table_value_total) == (6, 11019796)
    assert cover.other_managers == (
        OtherManager("0000931588", "PROVIDA PENSION FUND ADMINISTRATOR", "028-16107"),
        OtherManager("0000728618", "METROPOLITAN LIFE INSURANCE CO/NY", "028-00491"),
        OtherManager("0001529735", "MetLife Investment Management, LLC", "028-18628"),
    )
    # the period is in the thousands era, but the filing (signed 2023-03-22) is not
    empty = read_13f_information_table(b"<informationTable/>")
    assert decide_value_unit(cover.signature_date, empty).unit == "dollars"


# --- LTS One: the full-submission .txt envelope


def test_lts_one_from_submission_text() -> None:
    filing = read_13f_submission_text(LTS_TXT)
    assert filing.accession == "0001894188-23-000007"
    assert filing.filed == dt.date(2023, 11, 14)
    assert filing.cover.manager_cik == "0001894188"
    assert filing.cover.manager_name == "LTS One Management LP"
    assert filing.cover.period == dt.date(2023, 9, 30)
    assert filing.cover.crd_number == "000317572"
    assert len(filing.holdings) == 14
    amazon = filing.holdings.iloc[0]
    assert (amazon["name_of_issuer"], amazon["value_reported"], amazon["shares"]) == (
        "AMAZON COM INC",
        17479000,
        137500,
    )
    assert filing.holdings["name_of_issuer"].iloc[-1] == "VISA INC"
    assert filing.value_unit == "dollars"
    assert int(filing.holdings["value_usd"].sum()) == 454_926_000
    assert filing.cover_total is not None and filing.cover_total.status == "equal"
    assert filing.entries_match_cover is True


# --- the cover total against the rows


def test_a_cover_total_off_by_more_than_rounding_is_a_mismatch() -> None:
    """The crafted cover (tests/fixtures/CRAFTED.yaml) says 1,000 thousand dollars more than
    Bard's 278 rows add up to: $1,000,000, beyond the $278,000 rounding can explain."""
    filing = read_13f_filing(COVER_TOTAL_OFF / "primary_doc.xml", BARD / "infotable.xml")
    assert filing.value_unit == "thousands"
    assert filing.cover_total == CoverTotal(
        difference_usd=1_000_000, ratio=1_000_000 / 1_130_298_000, tolerance_usd=278_000
    )
    assert filing.cover_total.status == "mismatch"
    assert int(filing.holdings["value_usd"].sum()) == 1_129_298_000  # the rows stay as filed


@pytest.mark.parametrize(
    ("unit", "off", "status"),
    [
        # thousands: rounding is up to one unit ($1,000) a row, 278 rows
        ("thousands", 0, "equal"),
        ("thousands", 278, "rounding"),
        ("thousands", -278, "rounding"),
        ("thousands", 279, "mismatch"),
        ("thousands", -279, "mismatch"),
        # dollars: up to $1 a row
        ("dollars", 278, "rounding"),
        ("dollars", 279, "mismatch"),
    ],
)
def test_rounding_is_up_to_one_unit_a_row(unit: ValueUnit, off: int, status: str) -> None:
    values = _bard_table()["value_reported"]
    total = reconcile_cover_total(1_129_298 + off, values, unit)
    dollars = {"thousands": 1000, "dollars": 1}[unit]
    assert total == CoverTotal(
        difference_usd=off * dollars,
        ratio=off / (1_129_298 + off),
        tolerance_usd=278 * dollars,
    )
    assert total.status == status


def test_no_cover_total_records_no_difference() -> None:
    assert reconcile_cover_total(None, _bard_table()["value_reported"], "dollars") is None
    # a cover total of 0 with rows: a difference, but none relative to the total
    zero = reconcile_cover_total(0, _bard_table()["value_reported"], "dollars")
    assert zero == CoverTotal(difference_usd=-1_129_298, ratio=None, tolerance_usd=278)


# --- the unit decision


def _bard_table() -> pd.DataFrame:
    return read_13f_information_table(BARD / "infotable.xml")


def test_unit_by_filing_date_around_the_rule_change() -> None:
    table = _bard_table()
    assert decide_value_unit(dt.date(2023, 1, 2), table).unit == "thousands"
    assert decide_value_unit(dt.date(2023, 1, 3), table).unit == "dollars"  # SEC's first day


def test_pre_2023_filing_that_reported_dollars_is_detected() -> None:
    # Bard's real table written the way a dollars filer would have written it
    scaled = _bard_table().assign(value_reported=lambda t: t["value_reported"] * 1000)
    decision = decide_value_unit(dt.date(2021, 10, 15), scaled)
    assert decision.unit == "dollars"
    assert decision.median_implied_price > MAX_PLAUSIBLE_MEDIAN_PRICE
    assert "dollars" in decision.reason
    real = decide_value_unit(dt.date(2021, 10, 15), _bard_table())
    assert real.unit == "thousands" and real.median_implied_price < MAX_PLAUSIBLE_MEDIAN_PRICE


def test_principal_amount_rows_do_not_count_as_prices() -> None:
    bonds = _bard_table().assign(sh_prn="PRN", value_reported=lambda t: t["value_reported"] * 1000)
    decision = decide_value_unit(dt.date(2021, 10, 15), bonds)
    assert (decision.unit, decision.median_implied_price) == ("thousands", None)


def test_pre_2023_dollars_filing_end_to_end(tmp_path: Path) -> None:
    # Rewrite a copy of the real table with every <value> times 1000; the fixture is untouched.
    root = etree.fromstring((BARD / "infotable.xml").read_bytes())
    for element in root.iter("{*}value"):
        element.text = str(int(element.text) * 1000)
    table_path = tmp_path / "infotable-dollars.xml"
    table_path.write_bytes(etree.tostring(root, xml_declaration=True, encoding="UTF-8"))
    filing = read_13f_filing(BARD / "primary_doc.xml", table_path, filed=dt.date(2021, 10, 15))
    assert filing.value_unit == "dollars"
    assert int(filing.holdings["value_usd"].sum()) == 1_129_298_000
    # the cover still says 1129298 (thousands): recorded, not fatal
    assert filing.cover_total is not None and filing.cover_total.status == "mismatch"
    assert filing.cover_total.difference_usd == 1_129_298 - 1_129_298_000


# --- rejections


def test_table_reader_rejects_a_cover_and_non_integer_values(tmp_path: Path) -> None:
    with pytest.raises(MalformedFileError, match="informationTable"):
        read_13f_information_table(BARD / "primary_doc.xml")
    data = (MFN / "infotable.xml").read_bytes().replace(b"<value>320000<", b"<value>3.2e5<")
    with pytest.raises(MalformedFileError, match=r"<value> at line 7: '3.2e5'") as error:
        read_13f_information_table(data, name="mfn-bad.xml")
    assert error.value.path == "mfn-bad.xml"


def test_cover_reader_rejects_other_documents(tmp_path: Path) -> None:
    with pytest.raises(MalformedFileError, match="edgarSubmission"):
        read_13f_cover(MFN / "infotable.xml")
    not_13f = (BARD / "primary_doc.xml").read_bytes().replace(b">13F-HR<", b">10-K<")
    with pytest.raises(MalformedFileError, match="submissionType"):
        read_13f_cover(not_13f)
    no_cik = (BARD / "primary_doc.xml").read_bytes().replace(b"<cik>0001850858</cik>", b"")
    with pytest.raises(MalformedFileError, match="cik"):
        read_13f_cover(no_cik)
    bad_date = (BARD / "primary_doc.xml").read_bytes().replace(b">10-15-2021<", b">2021/10/15<")
    with pytest.raises(MalformedFileError, match="signatureDate"):
        read_13f_cover(bad_date)


def test_submission_without_information_table_is_rejected(tmp_path: Path) -> None:
    data = LTS_TXT.read_bytes()
    cut = data[: data.index(b"<DOCUMENT>\n<TYPE>INFORMATION TABLE")] + b"</SEC-DOCUMENT>\n"
    path = tmp_path / "no-table.txt"
    path.write_bytes(cut)
    with pytest.raises(MalformedFileError, match="information table"):
        read_13f_submission_text(path)
