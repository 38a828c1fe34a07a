"""The SEC-derived marts on the small demo: fundamentals, metrics, insiders, 13F holdings, managers.

Each test checks a scenario of the demo manifest (restatement, insiders, holdings, managers, split)
against the built warehouse of the shared ``small_warehouse`` fixture.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from conftest import Demo


@pytest.fixture(scope="module")
def con(small_warehouse: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection to the built small-demo warehouse."""
    with duckdb.connect(str(small_warehouse), read_only=True) as connection:
        yield connection


def _rows(con: duckdb.DuckDBPyConnection, sql: str, *params: Any) -> list[dict[str, Any]]:
    """Run ``sql`` and return its rows as dicts."""
    cursor = con.execute(sql, list(params))
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _issuer_of(con: duckdb.DuckDBPyConnection, ticker: str) -> int:
    """The one issuer entity id a ticker names in the security master."""
    issuers = con.execute(
        "select distinct issuer_entity_id from staging.stg_market__security_master "
        "where ticker = ?",
        [ticker],
    ).fetchall()
    assert len(issuers) == 1, issuers
    return issuers[0][0]


def _date(value: str) -> dt.date:
    return dt.date.fromisoformat(value)


# --- fundamentals -----------------------------------------------------------------------------


def test_restatement_gives_first_and_restated_rows(
    con: duckdb.DuckDBPyConnection, small_demo: Demo
) -> None:
    scenario = small_demo.scenarios["restatement"]
    issuer = _issuer_of(con, scenario["ticker"])
    rows = _rows(
        con,
        "select * from marts.fundamentals where issuer_entity_id = ? and period_end = ? "
        "and period_type = 'annual' order by known_from, accession",
        issuer,
        _date(scenario["period_end"]),
    )
    by_known = {row["known_from"]: row for row in rows}
    first = by_known[_date(scenario["first_known"])]
    restated = by_known[_date(scenario["restated_known"])]

    assert first["revenue"] != restated["revenue"]
    assert first["superseded_on"] == _date(scenario["restated_known"])
    assert not first["is_restatement"]
    assert restated["is_restatement"]
    assert restated["form"].endswith("/A")
    assert first["fiscal_period"] == restated["fiscal_period"] == "FY"
    # Every later row of the period (comparatives in later 10-Ks) carries the restated figure.
    assert all(
        r["revenue"] == restated["revenue"] for r in rows if r["known_from"] > first["known_from"]
    )
    # Exactly one row per period is current.
    assert [r["superseded_on"] for r in rows].count(None) == 1


def test_restatement_values_are_the_filings_facts(
    con: duckdb.DuckDBPyConnection, small_demo: Demo
) -> None:
    scenario = small_demo.scenarios["restatement"]
    issuer = _issuer_of(con, scenario["ticker"])
    facts = dict(
        con.execute(
            "select f.filed_date, f.value from staging.stg_sec__facts as f "
            "join staging.stg_market__security_master as m on f.cik = m.cik "
            "where m.issuer_entity_id = ? and f.tag = 'Revenues' and f.period_end = ? "
            "and datediff('day', f.period_start, f.period_end) > 300",
            [issuer, _date(scenario["period_end"])],
        ).fetchall()
    )
    mart = dict(
        con.execute(
            "select known_from, revenue from marts.fundamentals where issuer_entity_id = ? "
            "and period_end = ? and period_type = 'annual'",
            [issuer, _date(scenario["period_end"])],
        ).fetchall()
    )
    assert mart == facts


def test_as_of_picks_the_figure_known_then(
    con: duckdb.DuckDBPyConnection, small_demo: Demo
) -> None:
    """The API's as_of rule (latest known_from <= as_of) sees the original before the 10-K/A."""
    scenario = small_demo.scenarios["restatement"]
    issuer = _issuer_of(con, scenario["ticker"])
    sql = (
        "select revenue from marts.fundamentals where issuer_entity_id = ? and period_end = ? "
        "and period_type = 'annual' and known_from <= ? "
        "order by known_from desc, accession desc limit 1"
    )
    period_end = _date(scenario["period_end"])
    restated_known = _date(scenario["restated_known"])
    before = con.execute(
        sql, [issuer, period_end, restated_known - dt.timedelta(days=1)]
    ).fetchone()
    after = con.execute(sql, [issuer, period_end, restated_known]).fetchone()
    assert before is not None and after is not None
    assert before[0] != after[0]


def test_fundamentals_periods_are_classified(
    con: duckdb.DuckDBPyConnection, small_demo: Demo
) -> None:
    share_classes = small_demo.scenarios["share_classes"]
    wrong = con.execute(
        "select count(*) from marts.fundamentals where "
        "(period_type = 'quarterly' "
        "and datediff('day', period_start, period_end) not between 80 and 100) "
        "or (period_type = 'annual' "
        "and datediff('day', period_start, period_end) not between 350 and 380) "
        "or (period_type = 'annual') <> (fiscal_period = 'FY') "
        "or known_from <= period_end"
    ).fetchone()[0]
    assert wrong == 0
    # A filing's own (latest) period carries its balance sheet and its cover's shares outstanding
    # (which a company with several share classes reports per class: none here).
    missing = con.execute(
        "select issuer_entity_id, count(*) filter (where total_assets is null), "
        "count(*) filter (where shares_outstanding is null) "
        "from marts.fundamentals as f where period_end = "
        "(select max(period_end) from marts.fundamentals as o where o.accession = f.accession) "
        "group by all having count(*) filter (where total_assets is null) > 0 "
        "or count(*) filter (where shares_outstanding is null) > 0"
    ).fetchall()
    assert [issuer for issuer, _, _ in missing] == [share_classes["issuer_entity_id"]]
    assert [no_assets for _, no_assets, _ in missing] == [0]


# --- metrics ----------------------------------------------------------------------------------


def test_metrics_follow_the_restatement(con: duckdb.DuckDBPyConnection, small_demo: Demo) -> None:
    scenario = small_demo.scenarios["restatement"]
    issuer = _issuer_of(con, scenario["ticker"])
    rows = _rows(
        con,
        "select * from marts.metrics where issuer_entity_id = ? and period_end = ? "
        "and period_type = 'annual' order by known_from",
        issuer,
        _date(scenario["period_end"]),
    )
    by_known = {row["known_from"]: row for row in rows}
    first = by_known[_date(scenario["first_known"])]
    restated = by_known[_date(scenario["restated_known"])]
    assert first["net_margin"] != restated["net_margin"]
    assert [r["is_latest"] for r in rows] == [False] * (len(rows) - 1) + [True]
    for row in rows:
        assert row["known_from"] >= row["filing_date"]
        assert row["price_close"] is not None and row["price_date"] <= row["period_end"]


def test_metrics_formulas(con: duckdb.DuckDBPyConnection) -> None:
    rows = _rows(
        con,
        "select m.*, f.revenue, f.gross_profit, f.net_income, f.stockholders_equity, "
        "f.shares_outstanding, f.shares_weighted_basic, f.eps_diluted "
        "from marts.metrics as m join marts.fundamentals as f using "
        "(issuer_entity_id, period_end, period_type, accession) "
        "where m.pe_ratio is not null and m.period_type = 'annual' "
        "order by m.issuer_entity_id, m.period_end, m.known_from limit 50",
    )
    assert rows
    for r in rows:
        assert r["gross_margin"] == pytest.approx(r["gross_profit"] / r["revenue"])
        assert r["net_margin"] == pytest.approx(r["net_income"] / r["revenue"])
        assert r["eps"] == r["eps_ttm"] == r["eps_diluted"]
        assert r["pe_ratio"] == pytest.approx(r["price_close"] / r["eps_ttm"])
        assert r["pb_ratio"] == pytest.approx(r["market_cap"] / r["stockholders_equity"])
        # the contract: cover-page shares, else weighted basic shares (a multi-class issuer's
        # companyfacts has no cover-page count)
        shares = r["shares_outstanding"] or r["shares_weighted_basic"]
        assert r["book_value_per_share"] == pytest.approx(r["stockholders_equity"] / shares)
    latest = con.execute(
        "select count(*) from (select issuer_entity_id, period_end, period_type, "
        "sum(is_latest::int) as n from marts.metrics group by all) where n <> 1"
    ).fetchone()[0]
    assert latest == 0


def test_trailing_eps_is_split_adjusted(con: duckdb.DuckDBPyConnection, small_demo: Demo) -> None:
    """The first quarter after the split sums four quarters on the post-split share basis."""
    split = small_demo.scenarios["split"]
    issuer = _issuer_of(con, split["ticker"])
    split_date = _date(split["date"])
    quarters = _rows(
        con,
        "select period_end, coalesce(eps_diluted, eps_basic) as eps from marts.fundamentals "
        "where issuer_entity_id = ? and period_type = 'quarterly' and superseded_on is null "
        "order by period_end",
        issuer,
    )
    annuals = _rows(
        con,
        "select period_end, coalesce(eps_diluted, eps_basic) as eps from marts.fundamentals "
        "where issuer_entity_id = ? and period_type = 'annual' and superseded_on is null",
        issuer,
    )
    row = _rows(
        con,
        "select * from marts.metrics where issuer_entity_id = ? and period_type = 'quarterly' "
        "and period_end > ? and is_latest order by period_end limit 1",
        issuer,
        split_date,
    )[0]
    period_end = row["period_end"]
    annual = max(
        (a for a in annuals if a["period_end"] < period_end), key=lambda a: a["period_end"]
    )
    since = [q for q in quarters if annual["period_end"] < q["period_end"] <= period_end]
    earlier = [
        q
        for q in quarters
        if annual["period_end"] - dt.timedelta(days=365)
        < q["period_end"]
        <= period_end - dt.timedelta(days=360)
    ]
    assert len(since) == len(earlier) >= 1

    def basis(day: dt.date) -> float:
        return split["ratio"] if day < split_date else 1.0

    expected = annual["eps"] / basis(annual["period_end"])
    expected += sum(q["eps"] / basis(q["period_end"]) for q in since)
    expected -= sum(q["eps"] / basis(q["period_end"]) for q in earlier)
    assert row["eps_ttm"] == pytest.approx(expected)
    assert row["pe_ratio"] == pytest.approx(row["price_close"] / expected)


# --- insider transactions ---------------------------------------------------------------------


def test_insiders_have_derivative_lines_and_an_amendment(
    con: duckdb.DuckDBPyConnection, small_demo: Demo
) -> None:
    ticker = small_demo.scenarios["insiders"]["ticker"]
    issuer = _issuer_of(con, ticker)
    rows = _rows(con, "select * from marts.insider_transactions where ticker = ?", ticker)
    assert rows
    assert {r["entity_id"] for r in rows} == {issuer}
    assert any(r["is_derivative"] for r in rows)
    assert any(not r["is_derivative"] for r in rows)
    amendments = [r for r in rows if r["is_amendment"]]
    assert amendments and {r["form_type"] for r in amendments} == {"4/A"}
    assert {r["form_type"] for r in rows} == {"4", "4/A"}
    for r in rows:
        assert r["filing_date"] is not None and r["transaction_date"] <= r["filing_date"]
        assert r["is_coded"] == (not r["is_holding"])
        assert r["owner_cik"] and r["owner_relationship"]
    derivative = next(r for r in rows if r["is_derivative"] and not r["is_holding"])
    assert derivative["underlying_shares"] is not None


def test_insider_filing_date_comes_from_the_filing_index(con: duckdb.DuckDBPyConnection) -> None:
    mismatched = con.execute(
        "select count(*) from marts.insider_transactions as t "
        "join staging.stg_sec__filings as f on t.document_id = f.accession "
        "where t.filing_date <> f.filing_date"
    ).fetchone()[0]
    assert mismatched == 0


# --- institutional holdings and managers ------------------------------------------------------


def test_holdings_cover_the_scenario_quarters(
    con: duckdb.DuckDBPyConnection, small_demo: Demo
) -> None:
    scenario = small_demo.scenarios["holdings"]
    entity_id = small_demo.scenarios["plain"]["entity_id"]
    assert small_demo.scenarios["plain"]["ticker"] == scenario["ticker"]
    rows = _rows(
        con,
        "select * from marts.institutional_holdings where manager_id = ? and ticker = ? "
        "order by report_date",
        scenario["manager_id"],
        scenario["ticker"],
    )
    assert {r["report_date"] for r in rows} >= {_date(q) for q in scenario["quarters"]}
    for r in rows:
        assert r["entity_id"] == entity_id
        assert r["shares"] > 0 and r["value_usd"] > 0
        assert r["filing_date"] > r["report_date"]


def test_every_demo_holding_maps_to_an_entity(con: duckdb.DuckDBPyConnection) -> None:
    total, unmapped = con.execute(
        "select count(*), count(*) - count(entity_id) from marts.institutional_holdings"
    ).fetchone()
    assert total > 0 and unmapped == 0


def test_pre_2023_values_are_dollars(con: duckdb.DuckDBPyConnection) -> None:
    """Values filed in thousands (before 2023-01-03) are dollars: about shares x close."""
    rows = con.execute(
        "select h.value_usd, h.shares * p.close "
        "from marts.institutional_holdings as h "
        "asof join staging.stg_market__prices as p "
        "on h.entity_id = p.entity_id and h.report_date >= p.trade_date "
        "where h.filing_date < date '2023-01-03' and h.shares_or_principal = 'SH'"
    ).fetchall()
    if not rows:
        pytest.skip(
            "the demo starts after 2023-01-03 (generated from 2028 on): no filing in thousands; "
            "test_13f_amendments.py checks both units on fixed dates"
        )
    for value_usd, market_value in rows:
        # within 1%, or within the filing's unit ($1,000) for small positions
        assert value_usd == pytest.approx(market_value, rel=0.01, abs=1000)
        assert value_usd % 1000 == 0
    large = [(v, m) for v, m in rows if m >= 1_000_000]
    assert large and all(v == pytest.approx(m, rel=0.01) for v, m in large)


def test_manager_search_matches_several(con: duckdb.DuckDBPyConnection, small_demo: Demo) -> None:
    scenario = small_demo.scenarios["managers"]
    matches = _rows(
        con,
        "select * from marts.managers where manager_name ilike '%' || ? || '%'",
        scenario["search"],
    )
    assert len(matches) >= 2
    assert scenario["manager_id"] in {m["manager_id"] for m in matches}


def test_manager_latest_value_is_its_last_report(con: duckdb.DuckDBPyConnection) -> None:
    managers = _rows(con, "select * from marts.managers")
    assert managers
    for m in managers:
        assert m["cik"] == f"{m['manager_id']:010d}"
        filings, first, last = con.execute(
            "select count(distinct accession), min(report_date), max(report_date) "
            "from marts.institutional_holdings where manager_id = ?",
            [m["manager_id"]],
        ).fetchone()
        # the current report: a restatement replaces the original, new holdings add to it
        total = con.execute(
            "select sum(value_usd) from marts.institutional_holdings "
            "where manager_id = ? and report_date = ? and is_current",
            [m["manager_id"], last],
        ).fetchone()[0]
        assert (m["latest_value_usd"], m["filings"]) == (total, filings)
        assert (m["first_report_date"], m["last_report_date"]) == (first, last)
