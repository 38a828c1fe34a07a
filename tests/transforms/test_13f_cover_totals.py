"""The 13F cover total against the sum of its rows, from the reader to the holdings mart.

Bard's real 13F-HR (278 rows in thousands, its cover total their sum), the same table with the
cover crafted to say $1,000,000 more (tests/fixtures/CRAFTED.yaml), with a cover off by 278
thousand (what rounding each row to a thousand can explain: made here from the real cover), and
MFN's real 13F-HR/A (in dollars) are added to the raw tables of a copy of the small demo's
warehouse and the holdings and managers marts rebuilt by dbt (their tests too).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from conftest import FIXTURES

from tests.transforms.warehouse_copies import warehouse_with_landing_added

BARD = FIXTURES / "13f" / "bard-financial-services_2021q3"
COVER_TOTAL_OFF = FIXTURES / "13f-crafted" / "bard-financial-services_2021q3-cover-total-off"
MFN = FIXTURES / "13f" / "mfn-partners_2025q4_13F-HR-A"
ROUNDING = "bard-financial-services_2021q3-cover-total-rounded"
REAL_TOTAL = "<tableValueTotal>1129298</tableValueTotal>"


@pytest.fixture(scope="module")
def holdings(
    small_warehouse: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A copy of the small warehouse with the four filings in raw and the mart rebuilt."""
    folder = tmp_path_factory.mktemp("13f-cover-totals")
    filings = folder / "landing" / "sec" / "13f"
    for source in (BARD, COVER_TOTAL_OFF, MFN):
        shutil.copytree(source, filings / source.name)
    shutil.copyfile(BARD / "infotable.xml", filings / COVER_TOTAL_OFF.name / "infotable.xml")
    rounded = filings / ROUNDING
    shutil.copytree(BARD, rounded)
    cover = (BARD / "primary_doc.xml").read_text()
    assert cover.count(REAL_TOTAL) == 1
    (rounded / "primary_doc.xml").write_text(
        cover.replace(REAL_TOTAL, "<tableValueTotal>1129020</tableValueTotal>")
    )
    warehouse = folder / "warehouse.duckdb"
    warehouse_with_landing_added(
        small_warehouse,
        folder / "landing",
        "sec_13f",
        warehouse,
        *("build", "--select", "+institutional_holdings", "+managers"),
    )
    with duckdb.connect(str(warehouse), read_only=True) as connection:
        yield connection


def _by_filing(con: duckdb.DuckDBPyConnection) -> dict[str, tuple]:
    """Per filing: rows, value, and its distinct (cover_value_difference_usd,
    cover_value_difference_ratio, cover_total_status): one, the same on each of its rows."""
    rows = con.execute(
        "select accession, count(*), sum(value_usd), "
        "list(distinct (cover_value_difference_usd, cover_value_difference_ratio, "
        "cover_total_status)) "
        "from marts.institutional_holdings group by accession"
    ).fetchall()
    return {accession: (count, value, statuses) for accession, count, value, statuses in rows}


def test_each_row_carries_its_filings_cover_total_against_its_rows(
    holdings: duckdb.DuckDBPyConnection,
) -> None:
    filings = _by_filing(holdings)
    # the real filings tie out
    assert filings[BARD.name] == (278, 1_129_298_000, [(0, 0.0, "equal")])
    assert filings[MFN.name] == (2, 24_920_000, [(0, 0.0, "equal")])
    # 278 thousand below the rows' sum: at most $1,000 a row, what rounding explains
    assert filings[ROUNDING] == (
        278,
        1_129_298_000,
        [(-278_000, -278_000 / 1_129_020_000, "rounding")],
    )
    # $1,000,000 above: a mismatch, the rows published as filed
    assert filings[COVER_TOTAL_OFF.name] == (
        278,
        1_129_298_000,
        [(1_000_000, 1_000_000 / 1_130_298_000, "mismatch")],
    )
    # the demo's filings (written by its EDGAR writer) all tie out
    demo = [f for name, f in filings.items() if "_" not in name]
    assert demo and all(f[2] == [(0, 0.0, "equal")] for f in demo)
