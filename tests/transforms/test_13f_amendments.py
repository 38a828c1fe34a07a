"""13F amendments in the marts, with SEC's real 13F-HR/A.

The real file (tests/fixtures/13f/mfn-partners_2025q4_13F-HR-A, MFN Partners' NEW HOLDINGS
amendment of its 2025-12-31 report, two rows) is read by the real reader beside filings of the
same manager written in EDGAR's format by the demo's 13F writer: the original 2025-12-31 report
(not in the fixtures, so made here), and for 2025-09-30 an original, a NEW HOLDINGS amendment and
a later RESTATEMENT; and a 2021-12-31 report filed in 2022, whose values EDGAR's rule has in
thousands. They are added to the raw tables of a copy of the small demo's warehouse and the
holdings and managers marts rebuilt. Every date is fixed: the test holds on any day.
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from conftest import FIXTURES

from findata.demo.documents import Address, Filing13F, Holding13F
from findata.demo.sec_formats import (
    form13f_file_names,
    form13f_information_table_xml,
    form13f_primary_doc_xml,
)
from tests.api.endpoints.api_calls import fetch_rows
from tests.transforms.warehouse_copies import warehouse_with_landing_added

MFN_CIK = "0001732811"
REAL_AMENDMENT = "0000904454-26-000248"
Q3, Q4 = dt.date(2025, 9, 30), dt.date(2025, 12, 31)


def _holding(cusip: str, shares: int, price: float) -> Holding13F:
    return Holding13F(
        name_of_issuer=f"ISSUER {cusip}",
        title_of_class="COM",
        cusip=cusip,
        value_usd=round(shares * price),
        shares=shares,
        voting_sole=shares,
    )


def _filing(
    accession: str,
    period: dt.date,
    filed: dt.date,
    holdings: list[Holding13F],
    amendment_type: str | None = None,
) -> Filing13F:
    return Filing13F(
        accession=accession,
        filed=filed,
        period=period,
        manager_cik=MFN_CIK,
        manager_name="MFN Partners Management, LP",
        manager_address=Address("222 BERKELEY STREET, 13TH FLOOR", "BOSTON", "MA", "02116"),
        signer_name="Jon Reisman",
        holdings=tuple(holdings),
        amendment_number=1 if amendment_type else None,
        amendment_type=amendment_type,
    )


THOUSANDS_ERA = _filing(
    "0000904454-22-000050",
    dt.date(2021, 12, 31),
    dt.date(2022, 2, 10),
    [_holding("037833100", 1234, 177.57), _holding("594918104", 50, 336.32)],
)

FILINGS = [
    # 2025-12-31: the original; the real NEW HOLDINGS amendment adds to it
    _filing(
        "0000904454-26-000100",
        Q4,
        dt.date(2026, 2, 13),
        [_holding("037833100", 1000, 250.0), _holding("594918104", 500, 480.0)],
    ),
    # 2025-09-30: an original, new holdings added, then a restatement of the whole report
    _filing(
        "0000904454-25-000200",
        Q3,
        dt.date(2025, 11, 13),
        [_holding("037833100", 900, 240.0), _holding("594918104", 400, 470.0)],
    ),
    _filing(
        "0000904454-25-000210",
        Q3,
        dt.date(2025, 11, 20),
        [_holding("88160R101", 300, 400.0)],
        "NEW HOLDINGS",
    ),
    _filing(
        "0000904454-25-000220",
        Q3,
        dt.date(2025, 12, 1),
        [
            _holding("037833100", 950, 240.0),
            _holding("594918104", 400, 470.0),
            _holding("88160R101", 300, 400.0),
        ],
        "RESTATEMENT",
    ),
]


@pytest.fixture(scope="module")
def marts(
    small_warehouse: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A copy of the small warehouse with MFN's filings in raw and the 13F marts rebuilt."""
    folder = tmp_path_factory.mktemp("13f-amendments")
    landing = folder / "landing"
    shutil.copytree(
        FIXTURES / "13f" / "mfn-partners_2025q4_13F-HR-A",
        landing / "sec" / "13f" / REAL_AMENDMENT,
    )
    for filing in [*FILINGS, THOUSANDS_ERA]:
        primary, table = form13f_file_names(filing)
        for name, data in (
            (primary, form13f_primary_doc_xml(filing)),
            (table, form13f_information_table_xml(filing)),
        ):
            (landing / "sec" / name).parent.mkdir(parents=True, exist_ok=True)
            (landing / "sec" / name).write_bytes(data)
    warehouse = folder / "warehouse.duckdb"
    warehouse_with_landing_added(
        small_warehouse,
        landing,
        "sec_13f",
        warehouse,
        *("run", "--select", "+institutional_holdings", "+managers"),
    )
    with duckdb.connect(str(warehouse), read_only=True) as connection:
        yield connection


def _quarter(con: duckdb.DuckDBPyConnection, period: dt.date) -> list[dict[str, Any]]:
    return fetch_rows(
        con,
        "select * from marts.institutional_holdings where manager_id = ? and report_date = ? "
        "order by accession, line_number",
        int(MFN_CIK),
        period,
    )


def test_the_real_new_holdings_amendment_adds_to_the_original(
    marts: duckdb.DuckDBPyConnection,
) -> None:
    rows = _quarter(marts, Q4)
    assert all(row["is_current"] for row in rows)
    original = [row for row in rows if row["accession"] == FILINGS[0].accession]
    real = [row for row in rows if row["accession"] == REAL_AMENDMENT]
    assert len(original) + len(real) == len(rows) == 4
    assert {(r["is_amendment"], r["amendment_type"]) for r in original} == {(False, None)}
    assert {(r["is_amendment"], r["amendment_type"]) for r in real} == {(True, "NEW HOLDINGS")}
    # as filed (in dollars, filed in 2026): the warrant and the class A shares of the real file
    assert sorted((r["cusip"], r["shares"], r["value_usd"]) for r in real) == [
        ("G7553X106", 2_400_000, 24_600_000),
        ("G7553X114", 400_000, 320_000),
    ]


def test_a_restatement_supersedes_the_report_and_earlier_new_holdings(
    marts: duckdb.DuckDBPyConnection,
) -> None:
    rows = _quarter(marts, Q3)
    current = {(r["accession"], r["cusip"], r["shares"]) for r in rows if r["is_current"]}
    restatement = FILINGS[3]
    assert current == {(restatement.accession, h.cusip, h.shares) for h in restatement.holdings}
    superseded = {r["accession"] for r in rows if not r["is_current"]}
    assert superseded == {FILINGS[1].accession, FILINGS[2].accession}
    assert {r["amendment_type"] for r in rows if r["accession"] == restatement.accession} == {
        "RESTATEMENT"
    }


def test_the_managers_latest_value_counts_the_current_report_once(
    marts: duckdb.DuckDBPyConnection,
) -> None:
    (manager,) = fetch_rows(
        marts, "select * from marts.managers where manager_id = ?", int(MFN_CIK)
    )
    assert (manager["last_report_date"], manager["filings"]) == (Q4, 6)
    expected = sum(h.value_usd for h in FILINGS[0].holdings) + 320_000 + 24_600_000
    assert manager["latest_value_usd"] == expected


def test_values_filed_in_thousands_are_published_in_dollars(
    marts: duckdb.DuckDBPyConnection,
) -> None:
    rows = _quarter(marts, THOUSANDS_ERA.period)
    # written in thousands (half up) by the rule of 2022, published in dollars
    assert [(r["cusip"], r["value_usd"]) for r in rows] == [
        (h.cusip, round(h.value_usd / 1000) * 1000) for h in THOUSANDS_ERA.holdings
    ]
    dollars = _quarter(marts, Q4)
    assert {r["accession"]: r["value_usd"] for r in dollars if r["cusip"] == "037833100"} == {
        FILINGS[0].accession: 250_000
    }
