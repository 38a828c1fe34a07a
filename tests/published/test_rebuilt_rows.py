"""An incremental mart's rebuilt rows (``findata/published/rebuilt_rows.py``): the condition read
from ``<mart>__rebuilt``, the part prints updated from those rows alone
(``published_parts.parts_updated_by_rebuilt_rows``), which must equal a scan of the whole mart,
and the contract check's comparison narrowed to them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from findata.contracts.datasets import load_dataset_contract
from findata.orchestration.checks.unchanged import compare_with_version
from findata.orchestration.checks.warehouse import check_mart
from findata.published.parts import (
    Part,
    parts_updated_by_rebuilt_rows,
    plan_parts,
    read_parts,
    write_missing_parts,
    write_version_file,
)
from findata.published.rebuilt_rows import rebuilt_rows_condition
from findata.published.versions import attach_version

PRICES = load_dataset_contract("prices")
FIRST_DAY = dt.date(2019, 12, 1)
TODAY = dt.date(2026, 11, 20)

#: a valid bar of security ``e`` on day ``d`` (days after FIRST_DAY), varying with both
BAR = {
    "entity_id": "e",
    "ticker": "'T' || e",
    "entity_name": "'Name ' || e",
    "gics_sector": "'Industrials'",
    "date": f"DATE '{FIRST_DAY}' + d::INTEGER",
    "price_basis": "'trade'",
    "open": "10.0 + (e * d) % 7",
    "high": "11.5 + (e * d) % 7",
    "low": "9.0 + (e * d) % 7",
    "close": "10.5 + (e * d) % 7",
    "adj_close": "10.5 + (e * d) % 7",
    "volume": "1000 + d",
    "shares_outstanding": "5000000",
    "return_daily": "0.01",
    "split_ratio": "1.0",
    "split_factor": "1.0",
    "dividend": "0.0",
    "market_cap": "5e7",
    "exchange_code": "'XNYS'",
}


def _bars(entities: range, days: range, *, close_offset: float = 0.0) -> str:
    """A SELECT of bars of ``entities`` on ``days`` in the contract's columns and types."""
    columns = ", ".join(
        f"CAST({BAR[c.name]}{f' + {close_offset}' if c.name == 'close' else ''} AS {c.type}) "
        f'AS "{c.name}"'
        for c in PRICES.columns
    )
    return (
        f"SELECT {columns} FROM range({entities.start}, {entities.stop}) a(e), "
        f"range({days.start}, {days.stop}) b(d)"
    )


def _bars_of(entities: list[int], days: range, *, close_offset: float = 0.0) -> str:
    """The bars of each of ``entities`` on ``days``."""
    return " UNION ALL ".join(
        f"({_bars(range(e, e + 1), days, close_offset=close_offset)})" for e in entities
    )


def _version(con: duckdb.DuckDBPyConnection, published: Path) -> list[Part]:
    """``warehouse.marts.prices`` published as version ``v1.duckdb`` of parts; its parts."""
    parts = plan_parts(con, PRICES, "warehouse.marts.prices")
    write_missing_parts(con, published, PRICES, "warehouse.marts.prices", parts)
    write_version_file(published / "v1.duckdb", published, [PRICES], parts)
    return parts


@pytest.fixture
def warehouse(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    """A warehouse with 20 securities x 60 days of prices (Dec 2019 - Jan 2020), published as
    version ``v1`` (attached as ``v1``) in ``tmp_path / "published"``."""
    con = duckdb.connect()
    con.execute(f"ATTACH '{tmp_path / 'warehouse.duckdb'}' AS warehouse")
    con.execute("CREATE SCHEMA warehouse.marts")
    con.execute(f"CREATE TABLE warehouse.marts.prices AS {_bars(range(1, 21), range(60))}")
    published = tmp_path / "published"
    published.mkdir()
    _version(con, published)
    attach_version(con, published / "v1.duckdb", "v1")
    yield con
    con.close()


def _rebuild(
    con: duckdb.DuckDBPyConnection, entities: list[int], since: dt.date, bars: str
) -> None:
    """What the prices mart's incremental build does: keep the scope as ``prices__rebuilt``,
    delete those securities' bars from ``since`` on, append ``bars``."""
    con.execute(
        "CREATE OR REPLACE TABLE warehouse.marts.prices__rebuilt AS SELECT "
        "unnest(?::BIGINT[]) AS entity_id, ?::DATE AS date__from",
        [entities, since],
    )
    con.execute(
        "DELETE FROM warehouse.marts.prices WHERE entity_id IN (SELECT unnest(?::BIGINT[])) "
        "AND date >= ?",
        [entities, since],
    )
    con.execute(f"INSERT INTO warehouse.marts.prices {bars}")


def _updated(con: duckdb.DuckDBPyConnection) -> list[Part] | None:
    rebuilt = rebuilt_rows_condition(con, "warehouse", "marts", "prices")
    assert rebuilt is not None
    return parts_updated_by_rebuilt_rows(
        con, PRICES, "warehouse.marts.prices", read_parts(con, "v1"), "v1.main.prices", rebuilt
    )


def test_no_table_no_condition(warehouse: duckdb.DuckDBPyConnection) -> None:
    assert rebuilt_rows_condition(warehouse, "warehouse", "marts", "prices") is None


def test_the_condition_selects_the_rebuilt_securities_from_their_first_date(
    warehouse: duckdb.DuckDBPyConnection,
) -> None:
    _rebuild(warehouse, [3, 5], FIRST_DAY + dt.timedelta(days=50), _bars(range(0), range(0)))
    condition = rebuilt_rows_condition(warehouse, "warehouse", "marts", "prices")
    ((rows, entities, first),) = warehouse.execute(
        f"SELECT count(*), list(DISTINCT entity_id ORDER BY entity_id), min(date) "
        f"FROM v1.main.prices WHERE {condition}"
    ).fetchall()
    assert (rows, entities, first) == (20, [3, 5], FIRST_DAY + dt.timedelta(days=50))


def test_a_new_day_updates_the_recent_part_from_its_bars_alone(
    warehouse: duckdb.DuckDBPyConnection,
) -> None:
    day = 60  # 2020-01-30
    entities = [2, 7, 9]
    _rebuild(
        warehouse, entities, FIRST_DAY + dt.timedelta(days=day), _bars_of(entities, range(60, 61))
    )
    updated = _updated(warehouse)
    assert updated == plan_parts(warehouse, PRICES, "warehouse.marts.prices")
    served = {p.name: p.file for p in read_parts(warehouse, "v1")}
    assert {p.name for p in updated if p.file != served[p.name]} == {"recent"}


@settings(max_examples=25, deadline=None)
@given(
    entities=st.lists(st.integers(1, 24), min_size=1, max_size=6, unique=True),
    first=st.integers(0, 70),
    last=st.integers(0, 70),
    offset=st.sampled_from([0.0, 0.5]),
)
def test_parts_updated_from_the_rebuilt_rows_equal_a_scan(
    tmp_path_factory: pytest.TempPathFactory,
    entities: list[int],
    first: int,
    last: int,
    offset: float,
) -> None:
    """Any securities rebuilt from any date (bars removed, restated, added; securities new
    or gone; history or recent rows): the prints updated from the rebuilt rows alone name the
    very files a scan of the whole mart names, or say they cannot (the split moved)."""
    home = tmp_path_factory.mktemp("rebuilt")
    with duckdb.connect() as con:
        con.execute(f"ATTACH '{home / 'warehouse.duckdb'}' AS warehouse")
        con.execute("CREATE SCHEMA warehouse.marts")
        con.execute(f"CREATE TABLE warehouse.marts.prices AS {_bars(range(1, 21), range(60))}")
        (home / "published").mkdir()
        _version(con, home / "published")
        attach_version(con, home / "published" / "v1.duckdb", "v1")
        since = FIRST_DAY + dt.timedelta(days=first)
        days = range(first, max(first, last))
        _rebuild(con, entities, since, _bars_of(entities, days, close_offset=offset))
        updated = _updated(con)
        scanned = plan_parts(con, PRICES, "warehouse.marts.prices")
        if updated is None:  # the latest date moved into another year
            assert scanned[0].since != read_parts(con, "v1")[0].since
        else:
            assert updated == scanned


def test_a_version_without_sums_or_without_the_dataset_is_scanned(
    warehouse: duckdb.DuckDBPyConnection,
) -> None:
    _rebuild(warehouse, [1], FIRST_DAY + dt.timedelta(days=59), _bars(range(1, 2), range(59, 60)))
    rebuilt = rebuilt_rows_condition(warehouse, "warehouse", "marts", "prices")
    assert rebuilt is not None
    without_sums = [
        Part(p.dataset, p.name, p.since, p.rows, p.digest, p.file)
        for p in read_parts(warehouse, "v1")
    ]
    for served in (without_sums, []):
        assert (
            parts_updated_by_rebuilt_rows(
                warehouse, PRICES, "warehouse.marts.prices", served, "v1.main.prices", rebuilt
            )
            is None
        )


def test_a_check_compares_the_rebuilt_rows_alone_and_finds_a_bad_one(
    tmp_path: Path, warehouse: duckdb.DuckDBPyConnection
) -> None:
    """Against the version the mart was built after, a rebuilt security's new bars are the rows
    compared (its bars of the month before are not, though in the same part); a bad value in
    them fails the check."""
    day = FIRST_DAY + dt.timedelta(days=60)
    bad = _bars(range(4, 5), range(60, 62)).replace(
        'CAST(11.5 + (e * d) % 7 AS DOUBLE) AS "high"', 'CAST(1.0 AS DOUBLE) AS "high"'
    )
    assert bad != _bars(range(4, 5), range(60, 62))
    _rebuild(warehouse, [4], day, bad)
    warehouse.execute("DETACH v1")
    warehouse.close()
    version = tmp_path / "published" / "v1.duckdb"
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as con:
        comparison = compare_with_version(con, "marts", PRICES, ("v1", version))
        assert comparison is not None and comparison.from_rebuilt_rows
        assert "prices__rebuilt" in comparison.scope
        result = check_mart(
            con, "marts", PRICES, today=TODAY, previous_rows=1200, compared_with=comparison
        )
    assert (result.method, result.row_count) == ("changed", 1202)
    assert result.validation["meta"]["contract_check"]["changed_rows"] == 2
    assert not result.success
    assert ("expect_column_pair_values_a_to_be_greater_than_b", ("high", "low")) in {
        (f.expectation, f.columns) for f in result.failures
    }


def test_a_bar_in_a_new_year_moves_the_split_and_the_mart_is_scanned(
    warehouse: duckdb.DuckDBPyConnection,
) -> None:
    """The recent part starts on January 1 of the latest year: a first bar of 2021 makes every
    2020 bar history, which no rebuilt row says; the prints are not updated but scanned."""
    next_year = (dt.date(2021, 1, 4) - FIRST_DAY).days
    _rebuild(
        warehouse,
        [1],
        FIRST_DAY + dt.timedelta(days=next_year),
        _bars_of([1], range(next_year, next_year + 1)),
    )
    assert _updated(warehouse) is None
    assert plan_parts(warehouse, PRICES, "warehouse.marts.prices")[0].since == dt.date(2021, 1, 1)
