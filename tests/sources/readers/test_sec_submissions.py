"""read_submissions on the real SEC submissions files (main files and a pagination page)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from findata.sources.readers.coerce import DATE_DTYPE
from findata.sources.readers.errors import MalformedFileError
from findata.sources.readers.sec_submissions import (
    FILING_COLUMNS,
    TIMESTAMP_DTYPE,
    PaginationFile,
    read_submissions,
)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "xbrl-json" / "submissions"
FANNIE_MAE = FIXTURES / "CIK0000310522.json"
BUFFETT = FIXTURES / "CIK0000315090.json"
TESLA = FIXTURES / "CIK0001318605.json"
TESLA_PAGE = FIXTURES / "CIK0001318605-submissions-001.json"
MARVELL = FIXTURES / "CIK0001835632.json"

ALL_FILES = (
    FANNIE_MAE,
    BUFFETT,
    TESLA,
    TESLA_PAGE,
    MARVELL,
)


def _date(text: str) -> pd.Timestamp:
    return pd.Timestamp(text)


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name)
def test_every_real_file_parses_with_typed_filings(path: Path) -> None:
    document = read_submissions(path)
    filings = document.filings
    assert tuple(filings.columns) == FILING_COLUMNS
    assert str(filings["filing_date"].dtype) == DATE_DTYPE
    assert str(filings["report_date"].dtype) == DATE_DTYPE
    assert str(filings["acceptance_datetime"].dtype) == TIMESTAMP_DTYPE
    assert str(filings["size"].dtype) == "Int64"
    assert str(filings["is_xbrl"].dtype) == "boolean"
    for column in ("cik", "accession", "form", "items", "film_number"):
        assert isinstance(filings[column].dtype, pd.StringDtype)
    assert filings["accession"].notna().all()
    assert filings["filing_date"].notna().all()
    assert (filings["cik"] == document.cik).all()
    # SEC lists filings newest first
    assert filings["filing_date"].is_monotonic_decreasing


def test_fannie_mae_company_tickers_and_former_names() -> None:
    document = read_submissions(FANNIE_MAE)
    company = document.company
    assert company is not None
    assert company.cik == "0000310522"
    assert company.name == "FEDERAL NATIONAL MORTGAGE ASSOCIATION FANNIE MAE"
    assert company.entity_type == "operating"
    assert company.sic == "6111"
    assert company.sic_description == "Federal & Federally-Sponsored Credit Agencies"
    assert company.category == "Large accelerated filer"
    assert company.fiscal_year_end == "1231"
    assert company.state_of_incorporation is None  # written "" by SEC
    assert company.ein == "520883107"
    expected_tickers = [
        "FNMA", "FNMAS", "FNMAJ", "FNMAH", "FNMFN", "FNMAM", "FNMAN", "FNMAI",
        "FNMAT", "FNMAK", "FNMAL", "FNMFM", "FNMAO", "FNMAG", "FNMFO", "FNMAP",
    ]  # fmt: skip
    assert company.tickers == expected_tickers
    assert company.exchanges == ["OTC"] * 16
    assert document.tickers["ticker"].tolist() == expected_tickers
    assert document.tickers["exchange"].tolist() == ["OTC"] * 16

    former = document.former_names
    assert len(former) == 1
    assert former.loc[0, "name"] == "FEDERAL NATIONAL MORTGAGE ASSOCIATION"
    # written 1995-01-10T05:00:00.000Z / 2003-02-13T05:00:00.000Z: the date part is kept
    assert former.loc[0, "date_from"] == _date("1995-01-10")
    assert former.loc[0, "date_to"] == _date("2003-02-13")
    assert str(former["date_from"].dtype) == DATE_DTYPE


def test_fannie_mae_filings_and_pagination_files() -> None:
    document = read_submissions(FANNIE_MAE)
    assert len(document.filings) == 1154
    first = document.filings.iloc[0]
    assert first["accession"] == "0000310522-26-000030"
    assert first["form"] == "8-K"
    assert first["items"] == "7.01,9.01"
    assert first["filing_date"] == _date("2026-02-23")
    assert first["acceptance_datetime"] == pd.Timestamp("2026-02-23T14:04:31Z")
    assert first["size"] == 211124
    assert bool(first["is_inline_xbrl"]) is True
    assert document.pagination_files == [
        PaginationFile(
            "CIK0000310522-submissions-001.json", dt.date(2020, 11, 13), dt.date(2024, 2, 10), 2053
        ),
        PaginationFile(
            "CIK0000310522-submissions-002.json", dt.date(2015, 11, 12), dt.date(2020, 11, 11), 2055
        ),
        PaginationFile(
            "CIK0000310522-submissions-003.json", dt.date(1995, 1, 10), dt.date(2015, 11, 10), 1848
        ),
    ]


def test_tesla_main_file() -> None:
    document = read_submissions(TESLA)
    assert not document.is_page
    assert document.company is not None
    assert document.company.name == "Tesla, Inc."
    assert document.company.tickers == ["TSLA"]
    assert document.company.exchanges == ["Nasdaq"]
    assert document.company.state_of_incorporation == "TX"
    former = document.former_names
    assert former["name"].tolist() == ["TESLA MOTORS INC"]
    # written 2005-02-17T00:00:00.000Z: a tz conversion to US Eastern would give 02-16
    assert former.loc[0, "date_from"] == _date("2005-02-17")
    assert former.loc[0, "date_to"] == _date("2017-01-27")

    assert len(document.filings) == 1002
    assert document.pagination_files == [
        PaginationFile(
            "CIK0001318605-submissions-001.json", dt.date(2005, 2, 17), dt.date(2018, 2, 11), 720
        )
    ]
    ten_k = document.filings.iloc[2]
    assert ten_k["accession"] == "0001628280-26-003952"
    assert ten_k["form"] == "10-K"
    assert ten_k["filing_date"] == _date("2026-01-29")
    assert ten_k["report_date"] == _date("2025-12-31")
    # accepted 01:55:03 UTC = 20:55 the evening before in New York
    assert ten_k["acceptance_datetime"] == pd.Timestamp("2026-01-29T01:55:03Z")
    assert ten_k["act"] == "34"
    assert ten_k["file_number"] == "001-34756"
    assert ten_k["film_number"] == "26574326"
    assert ten_k["size"] == 15755490
    assert bool(ten_k["is_xbrl"]) and bool(ten_k["is_inline_xbrl"])
    assert ten_k["primary_document"] == "tsla-20251231.htm"
    assert ten_k["primary_doc_description"] == "10-K"

    form4 = document.filings.iloc[0]
    assert form4["form"] == "4"
    assert form4["primary_document"] == "xslF345X05/tm267481-1_4seq1.xml"
    assert pd.isna(form4["act"]) and pd.isna(form4["file_number"])  # "" in the file
    assert pd.isna(form4["items"])


def test_tesla_pagination_page() -> None:
    document = read_submissions(TESLA_PAGE)
    assert document.is_page
    assert document.company is None
    assert document.cik == "0001318605"  # from the file name
    assert document.tickers.empty and list(document.tickers.columns) == ["ticker", "exchange"]
    assert document.former_names.empty
    assert document.pagination_files == []
    filings = document.filings
    assert len(filings) == 720
    assert filings["filing_date"].iloc[0] == _date("2018-02-12")
    assert filings["filing_date"].iloc[-1] == _date("2005-02-17")
    last = filings.iloc[-1]
    assert last["accession"] == "9999999997-05-006484"
    assert last["form"] == "REGDEX"
    assert last["film_number"] == "05045361"  # leading zero kept
    assert last["items"] == "06"
    assert last["acceptance_datetime"] == pd.Timestamp("2005-02-23T16:38:36Z")


def test_tesla_page_count_matches_the_index_entry() -> None:
    main = read_submissions(TESLA)
    page = read_submissions(TESLA_PAGE)
    (entry,) = main.pagination_files
    assert entry.name == TESLA_PAGE.name
    assert entry.filing_count == len(page.filings)
    assert page.filings["filing_date"].min() == pd.Timestamp(entry.filing_from)


def test_buffett_is_an_individual_without_tickers() -> None:
    document = read_submissions(BUFFETT)
    company = document.company
    assert company is not None
    assert company.name == "BUFFETT WARREN E"
    assert company.entity_type == "other"
    assert company.tickers == [] and company.exchanges == []
    assert company.sic is None and company.fiscal_year_end is None and company.ein is None
    assert document.tickers.empty
    assert document.former_names.empty
    assert document.pagination_files == []
    filings = document.filings
    assert len(filings) == 523
    assert {"4", "13F-NT", "SC 13D/A"} <= set(filings["form"])
    assert not filings["is_xbrl"].any()
    oldest = filings.iloc[-1]
    assert oldest["accession"] == "0000315090-96-000002"
    assert oldest["form"] == "SC 13D"
    assert oldest["filing_date"] == _date("1996-04-12")
    assert pd.isna(oldest["primary_document"])


def test_marvell_has_no_pagination_files() -> None:
    document = read_submissions(MARVELL)
    assert document.pagination_files == []
    assert document.company is not None
    assert document.company.fiscal_year_end == "0130"
    assert document.company.tickers == ["MRVL"]
    assert len(document.filings) == 787
    assert document.filings["filing_date"].iloc[-1] == _date("2020-12-22")


# ---- malformed input -------------------------------------------------------------------


def _write(tmp_path: Path, name: str, document: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _tesla() -> dict[str, Any]:
    return json.loads(TESLA.read_text(encoding="utf-8"))


def test_not_json(tmp_path: Path) -> None:
    path = tmp_path / "CIK0001318605.json"
    path.write_text('{"cik": "0001318605", ', encoding="utf-8")
    with pytest.raises(MalformedFileError, match="not JSON") as caught:
        read_submissions(path)
    assert caught.value.path == str(path)


def test_top_level_array(tmp_path: Path) -> None:
    with pytest.raises(MalformedFileError, match="not an object"):
        read_submissions(_write(tmp_path, "x.json", [1, 2]))


def test_unequal_column_arrays(tmp_path: Path) -> None:
    document = _tesla()
    document["filings"]["recent"]["form"].pop()
    path = _write(tmp_path, "CIK0001318605.json", document)
    with pytest.raises(MalformedFileError, match=r"differ in length: .*form=1001") as caught:
        read_submissions(path)
    assert str(path) in str(caught.value)


def test_missing_required_column(tmp_path: Path) -> None:
    document = _tesla()
    del document["filings"]["recent"]["acceptanceDateTime"]
    with pytest.raises(MalformedFileError, match=r"'filings\.recent\.acceptanceDateTime'"):
        read_submissions(_write(tmp_path, "CIK0001318605.json", document))


def test_missing_filings(tmp_path: Path) -> None:
    document = _tesla()
    del document["filings"]
    with pytest.raises(MalformedFileError, match="missing required key 'filings'"):
        read_submissions(_write(tmp_path, "CIK0001318605.json", document))


def test_cik_not_digits(tmp_path: Path) -> None:
    document = _tesla()
    document["cik"] = "TSLA"
    with pytest.raises(MalformedFileError, match="cik is not a CIK: 'TSLA'"):
        read_submissions(_write(tmp_path, "tesla.json", document))


def test_file_name_and_cik_disagree(tmp_path: Path) -> None:
    with pytest.raises(MalformedFileError, match="file name says CIK 0000000001"):
        read_submissions(_write(tmp_path, "CIK0000000001.json", _tesla()))


def test_tickers_and_exchanges_unpaired(tmp_path: Path) -> None:
    document = _tesla()
    document["exchanges"] = []
    with pytest.raises(MalformedFileError, match="'tickers' has 1 entries but 'exchanges' has 0"):
        read_submissions(_write(tmp_path, "CIK0001318605.json", document))


def test_bad_filing_date_names_the_row(tmp_path: Path) -> None:
    document = _tesla()
    document["filings"]["recent"]["filingDate"][5] = "2026-02-30"
    with pytest.raises(MalformedFileError, match=r"filingDate\[5\] is not a date: '2026-02-30'"):
        read_submissions(_write(tmp_path, "CIK0001318605.json", document))


def test_bad_acceptance_time_names_the_row(tmp_path: Path) -> None:
    document = _tesla()
    document["filings"]["recent"]["acceptanceDateTime"][3] = "yesterday"
    with pytest.raises(MalformedFileError, match=r"acceptanceDateTime\[3\] is not a timestamp"):
        read_submissions(_write(tmp_path, "CIK0001318605.json", document))


def test_bad_accession(tmp_path: Path) -> None:
    document = _tesla()
    document["filings"]["recent"]["accessionNumber"][0] = "000110465926021746"
    with pytest.raises(MalformedFileError, match="not an accession number"):
        read_submissions(_write(tmp_path, "CIK0001318605.json", document))


def test_page_needs_a_cik_in_its_file_name(tmp_path: Path) -> None:
    page = json.loads(TESLA_PAGE.read_text(encoding="utf-8"))
    with pytest.raises(MalformedFileError, match="file name must be"):
        read_submissions(_write(tmp_path, "page-001.json", page))


def test_page_with_unequal_arrays(tmp_path: Path) -> None:
    page = json.loads(TESLA_PAGE.read_text(encoding="utf-8"))
    page["size"] = page["size"][:10]
    with pytest.raises(MalformedFileError, match="size=10"):
        read_submissions(_write(tmp_path, TESLA_PAGE.name, page))


def test_neither_main_file_nor_page(tmp_path: Path) -> None:
    with pytest.raises(MalformedFileError, match="neither a submissions file"):
        read_submissions(_write(tmp_path, "CIK0001318605.json", {"hello": 1}))
