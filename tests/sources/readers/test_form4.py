"""Form 4 reader against the real filings in tests/fixtures/form4 (values checked by eye)."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import pandas as pd
import pytest

from findata.sources.readers.coerce import DATE_DTYPE
from findata.sources.readers.errors import MalformedFileError
from findata.sources.readers.form4 import (
    LINE_COLUMNS,
    OWNER_COLUMNS,
    accession_from_file_name,
    read_form4,
)
from findata.sources.readers.sec_xml import find_child, parse_xml, read_value_field

FORM4 = Path(__file__).resolve().parents[2] / "fixtures" / "form4"

TESLA = FORM4 / "0000899243-21-048676_doc4.xml"
LINKEDIN = FORM4 / "0001181431-11-033001_rrd313108.xml"
FRACTYL = FORM4 / "0000950170-24-012830_ownership.xml"
PALANTIR = FORM4 / "0001321655-24-000181_wk-form4_1727395357.xml"
MONGODB = FORM4 / "0001441816-23-000153_wf-form4_168910627474492.xml"
SQUARE = FORM4 / "0000899243-18-030317_doc4.xml"
ADAGIO = FORM4 / "0000899243-22-012864_doc4.xml"
SNOWFLAKE = FORM4 / "snowflake_form4.snow.xml"
WATER374 = FORM4 / "374water_374WaterForm4.xml"
VERTEX = FORM4 / "vertex_VertexForm4.derivative-only.xml"

ALL_FILINGS = (
    TESLA,
    LINKEDIN,
    FRACTYL,
    PALANTIR,
    MONGODB,
    SQUARE,
    ADAGIO,
    SNOWFLAKE,
    WATER374,
    VERTEX,
)


def _date(text: str) -> pd.Timestamp:
    return pd.Timestamp(text)


def _row(lines: pd.DataFrame, sequence: int) -> pd.Series:
    match = lines[lines["line_sequence"] == sequence]
    assert len(match) == 1
    return match.iloc[0]


@pytest.mark.parametrize("path", ALL_FILINGS, ids=lambda p: p.name)
def test_every_real_filing_parses_with_typed_columns(path: Path) -> None:
    doc = read_form4(path)
    assert list(doc.lines.columns) == list(LINE_COLUMNS)
    assert list(doc.owners.columns) == list(OWNER_COLUMNS)
    for column in ("transaction_date", "deemed_execution_date", "exercise_date", "expiration_date"):
        assert doc.lines[column].dtype == DATE_DTYPE
    assert doc.lines["equity_swap_involved"].dtype == "boolean"
    assert doc.owners["is_director"].dtype == "boolean"
    assert doc.lines["line_sequence"].tolist() == list(range(1, len(doc.lines) + 1))
    assert len(doc.header.issuer_cik) == 10 and doc.header.issuer_cik.isdigit()
    assert len(doc.owners) >= 1
    assert doc.owners["owner_cik"].str.len().eq(10).all()
    # every footnote a line cites is defined in the document
    cited = {i for ids in doc.lines["footnote_ids"].dropna() for i in ids.split(",")}
    assert cited <= set(doc.footnotes["footnote_id"])


def test_tesla_header_owner_and_sale_row() -> None:
    doc = read_form4(TESLA)
    header = doc.header
    assert header.accession == "0000899243-21-048676"
    assert header.issuer_cik == "0001318605"
    assert header.issuer_name == "Tesla, Inc."
    assert header.issuer_ticker == "TSLA"
    assert header.schema_version == "X0306"
    assert header.document_type == "4"
    assert header.period_of_report == dt.date(2021, 12, 16)
    assert header.aff10b5_one is None  # X0306 has no aff10b5One element
    assert header.not_subject_to_section16 is False
    assert header.remarks is not None and "split into two filings" in header.remarks

    owner = doc.owners.iloc[0]
    assert (owner["owner_cik"], owner["owner_name"], owner["officer_title"]) == (
        "0001494730",
        "Musk Elon",
        "CEO",
    )
    assert owner["is_director"] and owner["is_officer"] and owner["is_ten_percent_owner"]
    assert not owner["is_other"]

    assert len(doc.lines) == 31
    assert (doc.lines["table"] == "non_derivative").sum() == 30
    sale = _row(doc.lines, 2)
    assert sale["transaction_code"] == "S"
    assert sale["shares"] == 5100
    assert sale["price_per_share"] == 923.909
    assert sale["acquired_disposed"] == "D"
    assert sale["shares_owned_following"] == 2146840
    assert sale["transaction_date"] == _date("2021-12-16")
    assert pd.isna(sale["deemed_execution_date"])  # written as an empty element
    assert sale["equity_swap_involved"] == False  # noqa: E712  written "0"
    assert sale["footnote_ids"] == "F1,F2,F3"
    assert len(doc.footnotes) == 33


def test_tesla_option_exercise_in_derivative_table() -> None:
    option = read_form4(TESLA).lines.iloc[-1]
    assert option["table"] == "derivative"
    assert option["line_sequence"] == 31
    assert option["security_title"] == "Non-Qualifed Stock Option (right to buy)"  # sic
    assert option["conversion_or_exercise_price"] == 6.24
    assert option["transaction_code"] == "M"
    assert option["shares"] == 2151940
    assert option["price_per_share"] == 0.0
    assert pd.isna(option["exercise_date"])  # footnotes F32/F33 only
    assert option["expiration_date"] == _date("2022-08-13")
    assert option["underlying_title"] == "Common Stock"
    assert option["underlying_shares"] == 2151940
    assert option["shares_owned_following"] == 8385757
    assert option["footnote_ids"] == "F1,F32,F33"


def test_vertex_derivative_only_with_footnote_only_fields() -> None:
    doc = read_form4(VERTEX)
    assert doc.header.accession is None  # the file name carries none
    assert doc.header.issuer_cik == "0000875320"
    assert len(doc.lines) == 1
    line = doc.lines.iloc[0]
    assert (line["table"], line["kind"], line["security_title"]) == (
        "derivative",
        "transaction",
        "Deferred Stock Units",
    )
    assert math.isnan(line["conversion_or_exercise_price"])
    assert pd.isna(line["exercise_date"]) and pd.isna(line["expiration_date"])
    assert line["shares"] == 196.356
    assert line["price_per_share"] == 222.81
    assert line["underlying_shares"] == 196.356
    assert line["shares_owned_following"] == 12629.042
    assert line["footnote_ids"] == "F1"
    assert doc.footnotes["footnote_id"].tolist() == ["F1"]
    assert doc.footnotes["text"].iloc[0].startswith("Each deferred stock unit represents")


def test_value_field_helper_keeps_footnote_ids_when_value_is_missing() -> None:
    root = parse_xml(VERTEX)
    line = find_child(root, "derivativeTable", "derivativeTransaction")
    price = read_value_field(line, "conversionOrExercisePrice")
    assert (price.value, price.footnote_ids) == (None, ("F1",))
    shares = read_value_field(line, "transactionAmounts", "transactionShares")
    assert (shares.value, shares.footnote_ids) == ("196.356", ())
    absent = read_value_field(line, "valueOwnedFollowingTransaction")
    assert (absent.value, absent.footnote_ids) == (None, ())


def test_accession_argument_used_only_when_file_name_has_none() -> None:
    assert read_form4(VERTEX, accession="0001209191-20-054321").header.accession == (
        "0001209191-20-054321"
    )
    # the file name wins over the argument
    assert read_form4(TESLA, accession="0001209191-20-054321").header.accession == (
        "0000899243-21-048676"
    )
    assert accession_from_file_name("0000899243-21-048676_doc4.xml") == "0000899243-21-048676"
    assert accession_from_file_name("000089924321048676_doc4.xml") is None
    with pytest.raises(ValueError, match="accession"):
        read_form4(VERTEX, accession="12345")


def test_linkedin_x0303_owners_and_footnote_only_prices() -> None:
    doc = read_form4(LINKEDIN)
    assert doc.header.schema_version == "X0303"
    assert doc.header.issuer_cik == "0001271024"
    assert doc.owners["owner_name"].tolist() == [
        "Hoffman Reid",
        "Reid Hoffman & Michelle Yee Living Trust",
    ]
    assert doc.owners["owner_cik"].tolist() == ["0001519339", "0001521103"]
    assert doc.owners["is_director"].tolist() == [True, False]
    assert doc.owners["is_ten_percent_owner"].tolist() == [True, True]

    assert doc.lines["table"].tolist() == ["non_derivative"] * 4 + ["derivative"] * 3
    assert doc.lines["transaction_code"].tolist() == ["C", "J", "C", "S", "C", "J", "C"]
    conversion = _row(doc.lines, 1)
    assert conversion["shares"] == 2028942
    assert math.isnan(conversion["price_per_share"])  # <footnoteId id="F2"/> only
    assert conversion["nature_of_ownership"] == "See footnote"
    assert conversion["footnote_ids"] == "F1,F2,F3"
    sale = _row(doc.lines, 4)
    assert (sale["shares"], sale["price_per_share"], sale["shares_owned_following"]) == (
        115335,
        41.85,
        0,
    )
    # ids in order of first appearance, each once (F5 appears twice in the line)
    assert _row(doc.lines, 6)["footnote_ids"] == "F4,F7,F8,F5,F3"
    assert len(doc.footnotes) == 8
    assert '(the "Living Trust")' in doc.footnotes.set_index("footnote_id").loc["F3", "text"]


def test_fractyl_true_false_booleans_and_six_owners() -> None:
    doc = read_form4(FRACTYL)
    assert doc.header.aff10b5_one is False  # <aff10b5One>false</aff10b5One>
    assert doc.header.not_subject_to_section16 is None  # element absent
    assert len(doc.owners) == 6
    assert doc.owners["is_ten_percent_owner"].all()
    assert not doc.owners["is_director"].any()
    assert doc.owners["owner_name"].iloc[-1] == "THIEL PETER"
    assert (doc.lines["table"] == "non_derivative").sum() == 3
    assert (doc.lines["table"] == "derivative").sum() == 5
    first = _row(doc.lines, 1)
    assert first["equity_swap_involved"] == False  # noqa: E712  written "false"
    assert math.isnan(first["price_per_share"])
    purchase = _row(doc.lines, 3)
    assert (purchase["transaction_code"], purchase["shares"], purchase["price_per_share"]) == (
        "P",
        333333,
        15.0,
    )
    assert purchase["direct_or_indirect"] == "I"


def test_palantir_one_zero_booleans_and_holdings() -> None:
    doc = read_form4(PALANTIR)
    assert doc.header.aff10b5_one is True  # <aff10b5One>1</aff10b5One>
    assert doc.header.schema_version == "X0508"
    assert doc.lines["kind"].tolist() == ["transaction"] * 4 + ["holding"] * 3
    first = _row(doc.lines, 1)
    assert (first["shares"], first["price_per_share"], first["shares_owned_following"]) == (
        7214637,
        36.8567,
        55636551,
    )
    holding = _row(doc.lines, 7)
    assert holding["shares_owned_following"] == 53487
    assert pd.isna(holding["transaction_code"]) and pd.isna(holding["transaction_date"])
    assert holding["footnote_ids"] == "F7,F10"
    assert len(doc.footnotes) == 10


def test_mongodb_gifts_and_blank_officer_title() -> None:
    doc = read_form4(MONGODB)
    assert doc.header.aff10b5_one is False  # <aff10b5One>0</aff10b5One>
    assert doc.header.schema_version == "X0407"
    assert doc.lines["transaction_code"].tolist() == ["G", "G"]
    assert doc.lines["shares"].tolist() == [941, 941]
    assert doc.lines["shares_owned_following"].tolist() == [715, 244513]
    assert pd.isna(doc.owners["officer_title"].iloc[0])  # <officerTitle></officerTitle>


def test_square_holdings_between_transactions_and_derivatives() -> None:
    lines = read_form4(SQUARE).lines
    assert len(lines) == 14
    assert lines["kind"].tolist() == ["transaction"] * 8 + ["holding"] * 3 + ["transaction"] * 3
    growth_fund = _row(lines, 10)
    assert growth_fund["kind"] == "holding"
    assert growth_fund["shares_owned_following"] == 858081
    assert growth_fund["nature_of_ownership"] == "By Sequoia Capital U.S. Growth Fund IV, L.P."
    assert growth_fund["footnote_ids"] == "F4"
    assert _row(lines, 4)["transaction_code"] == "J"


def test_adagio_filing_without_transactions() -> None:
    doc = read_form4(ADAGIO)
    assert len(doc.lines) == 1
    holding = doc.lines.iloc[0]
    assert (holding["kind"], holding["shares_owned_following"]) == ("holding", 11241580)
    assert len(doc.owners) == 4
    assert doc.owners["is_other"].all()
    assert doc.owners["other_text"].tolist() == ["See Remarks"] * 4
    assert doc.header.remarks.startswith("This Form 4 is not being filed in connection")


def test_snowflake_without_xml_declaration() -> None:
    assert SNOWFLAKE.read_bytes().startswith(b"<ownershipDocument>")
    doc = read_form4(SNOWFLAKE)
    assert doc.header.issuer_ticker == "SNOW"
    assert doc.owners["officer_title"].tolist() == ["Chief Financial Officer"]
    assert pd.isna(doc.owners["other_text"].iloc[0])  # <otherText/>
    assert doc.lines["kind"].tolist() == ["transaction"] * 6 + ["holding"] * 8 + ["transaction"]
    option = doc.lines.iloc[-1]
    assert option["conversion_or_exercise_price"] == 8.88
    assert option["underlying_shares"] == 200000.0  # written "200000.0"
    assert option["expiration_date"] == _date("2029-08-26")
    assert pd.isna(option["exercise_date"]) and option["footnote_ids"] == "F16"
    assert len(doc.footnotes) == 16


def test_374water_missing_relationship_flags_are_na() -> None:
    doc = read_form4(WATER374)
    owner = doc.owners.iloc[0]
    assert owner["is_officer"] == True  # noqa: E712  written "true"
    assert pd.isna(owner["is_director"]) and pd.isna(owner["is_ten_percent_owner"])
    assert owner["officer_title"] == "Chief Technology Officer"
    assert doc.lines["table"].tolist() == ["non_derivative", "derivative"]


# --- rejections (bad variants are built in tmp_path from the real bytes; fixtures untouched)


def _variant(tmp_path: Path, source: Path, old: bytes, new: bytes, name: str) -> Path:
    data = source.read_bytes()
    assert old in data
    target = tmp_path / name
    target.write_bytes(data.replace(old, new, 1))
    return target


def test_rejects_document_that_is_not_an_ownership_document() -> None:
    other = Path(__file__).resolve().parents[2] / "fixtures/13f/metlife_2021q4/primary_doc.xml"
    with pytest.raises(MalformedFileError, match="edgarSubmission") as error:
        read_form4(other)
    assert error.value.path == str(other)


def test_rejects_missing_issuer_cik(tmp_path: Path) -> None:
    path = _variant(tmp_path, VERTEX, b"<issuerCik>0000875320</issuerCik>", b"", "no-cik.xml")
    with pytest.raises(MalformedFileError, match="issuerCik"):
        read_form4(path)


def test_rejects_unparsable_xml_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "truncated.xml"
    path.write_bytes(VERTEX.read_bytes()[:2000])
    with pytest.raises(MalformedFileError, match=r"line \d+") as error:
        read_form4(path)
    assert error.value.path == str(path)


def test_rejects_other_document_types_and_bad_numbers(tmp_path: Path) -> None:
    form5 = _variant(
        tmp_path, VERTEX, b"<documentType>4</documentType>", b"<documentType>5</documentType>", "f5"
    )
    with pytest.raises(MalformedFileError, match="documentType"):
        read_form4(form5)
    bad = _variant(tmp_path, VERTEX, b"<value>196.356</value>", b"<value>lots</value>", "bad")
    with pytest.raises(MalformedFileError, match=r"transactionShares.*line \d+.*lots"):
        read_form4(bad)


def test_accepts_amendment_and_dates_with_timezone(tmp_path: Path) -> None:
    amended = _variant(
        tmp_path,
        VERTEX,
        b"<documentType>4</documentType>",
        b"<documentType>4/A</documentType>\n"
        b"<dateOfOriginalSubmission>2020-10-16</dateOfOriginalSubmission>",
        "amended.xml",
    )
    path = _variant(
        tmp_path,
        amended,
        b"<value>2020-10-15</value>",
        b"<value>2020-10-15-05:00</value>",
        "amended-tz.xml",
    )
    doc = read_form4(path)
    assert doc.header.document_type == "4/A"
    assert doc.header.date_of_original_submission == dt.date(2020, 10, 16)
    assert doc.lines["transaction_date"].iloc[0] == _date("2020-10-15")


def test_rejects_entity_declarations(tmp_path: Path) -> None:
    path = tmp_path / "entities.xml"
    path.write_bytes(
        b'<?xml version="1.0"?>\n<!DOCTYPE ownershipDocument [<!ENTITY x "xx">]>\n'
        b"<ownershipDocument><documentType>&x;</documentType></ownershipDocument>"
    )
    with pytest.raises(MalformedFileError, match="entit"):
        read_form4(path)
    external = tmp_path / "external.xml"
    external.write_bytes(
        b'<?xml version="1.0"?>\n<!DOCTYPE r [<!ENTITY e SYSTEM "file:///etc/hostname">]>\n'
        b"<ownershipDocument>&e;</ownershipDocument>"
    )
    with pytest.raises(MalformedFileError):
        read_form4(external)
