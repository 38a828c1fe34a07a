"""The SEC's company list in the security master: snapshots of it, as the fetch lands them, are
added to a copy of the small demo's warehouse and the reference marts rebuilt. A company the
demo's vendor master covers keeps the vendor's rows alone; a company known only from the SEC
becomes an issuer and a security per ticker, valid from the first snapshot that lists it to the
day before the first that does not. The test's snapshots are of fixed days in 2024; the demo's
own snapshot (its last session, before today), which lists none of the test's tickers, comes
after them: the test holds on any day."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from findata.sources.readers.sec_company_tickers import snapshot_name
from tests.transforms.warehouse_copies import warehouse_with_landing_added

#: a company the demo does not have (Tesla's CIK), and the days three snapshots were seen
NEW_CIK = 1318605
DAY_1, DAY_2, DAY_3 = dt.date(2024, 3, 1), dt.date(2024, 3, 4), dt.date(2024, 3, 6)
ISSUER_ID = 7_000_000_000_000 + NEW_CIK
FIELDS = ["cik", "name", "ticker", "exchange"]


@pytest.fixture(scope="module")
def warehouse(small_warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with duckdb.connect(str(small_warehouse), read_only=True) as con:
        vendor_cik, vendor_ticker = con.execute(
            "select cik, ticker from raw.security_master where entity_grain = 'security' "
            "and valid_to is null order by entity_id limit 1"
        ).fetchone()
    vendor = [int(vendor_cik), "A VENDOR COMPANY AS THE SEC NAMES IT", vendor_ticker, "NYSE"]
    snapshots = {
        DAY_1: [vendor, [NEW_CIK, "Tesla Motors, Inc.", "TSLA", "Nasdaq"]],
        DAY_2: [vendor, [NEW_CIK, "Tesla, Inc.", "TSLA", "Nasdaq"]],
        # TSLA gone, TSLB listed, on another venue
        DAY_3: [vendor, [NEW_CIK, "Tesla, Inc.", "TSLB", "NYSE"]],
    }
    folder = tmp_path_factory.mktemp("landing")
    (folder / "sec" / "company_tickers").mkdir(parents=True)
    for day, rows in snapshots.items():
        path = folder / "sec" / "company_tickers" / snapshot_name(day)
        path.write_text(json.dumps({"fields": FIELDS, "data": rows}))
    built = tmp_path_factory.mktemp("warehouse") / "warehouse.duckdb"
    warehouse_with_landing_added(
        small_warehouse,
        folder,
        "sec_company_tickers",
        built,
        *("run", "--select", "+entities", "+ticker_history"),
    )
    yield built


@pytest.fixture(scope="module")
def demo_day(small_warehouse: Path) -> dt.date:
    """The day of the demo's own company-list snapshot."""
    ((day,),) = _rows(small_warehouse, "select distinct seen_on::date from raw.sec_company_tickers")
    assert day > DAY_3
    return day


def _rows(warehouse: Path, sql: str, *args: object) -> list[tuple[object, ...]]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.execute(sql, list(args)).fetchall()


def test_a_company_known_only_from_the_sec_is_valid_from_when_first_seen(
    warehouse: Path, demo_day: dt.date
) -> None:
    history = _rows(
        warehouse,
        "select ticker, entity_id, issuer_entity_id, exchange, valid_from, valid_to "
        "from marts.ticker_history where issuer_entity_id = ? order by valid_from",
        ISSUER_ID,
    )
    first, second = 10_000_000_000_000 + NEW_CIK * 1000 + 1, 10_000_000_000_000 + NEW_CIK * 1000 + 2
    assert history == [
        ("TSLA", first, ISSUER_ID, "XNAS", DAY_1, DAY_3 - dt.timedelta(days=1)),
        # not in the demo's later snapshot: listed until the day before it
        ("TSLB", second, ISSUER_ID, "XNYS", DAY_3, demo_day - dt.timedelta(days=1)),
    ]
    entities = _rows(
        warehouse,
        "select entity_id, entity_grain, ticker, name, cik, country, figi, listed_from, listed_to "
        "from marts.entities where issuer_entity_id = ? order by entity_id",
        ISSUER_ID,
    )
    cik = f"{NEW_CIK:010d}"
    assert entities == [
        (
            ISSUER_ID,
            "issuer",
            None,
            "Tesla, Inc.",
            cik,
            None,
            None,
            DAY_1,
            demo_day - dt.timedelta(1),
        ),
        (first, "security", "TSLA", "Tesla, Inc.", cik, None, None, DAY_1, DAY_3 - dt.timedelta(1)),
        (
            second,
            "security",
            "TSLB",
            "Tesla, Inc.",
            cik,
            None,
            None,
            DAY_3,
            demo_day - dt.timedelta(1),
        ),
    ]


def test_a_company_the_vendor_covers_keeps_the_vendors_rows_alone(
    warehouse: Path, small_warehouse: Path
) -> None:
    query = (
        "select entity_id, ticker, valid_from, valid_to, exchange from marts.ticker_history "
        "where entity_id in (select entity_id from marts.entities where cik = ("
        "  select lpad(cik, 10, '0') from raw.security_master where entity_grain = 'security' "
        "  and valid_to is null order by entity_id limit 1)) order by all"
    )
    assert _rows(warehouse, query) == _rows(small_warehouse, query)
    assert _rows(warehouse, "select count(*) from marts.entities where entity_id >= 7e12") == [(3,)]
