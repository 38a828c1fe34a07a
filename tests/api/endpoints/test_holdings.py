"""``/v1/holdings`` over real HTTP on the published small demo: the counted envelope, the row order
walked page by page, the ``quarter``, ``manager_id`` and ``include_superseded`` parameters and
their 400 texts (checked before the plan), company-level resolution, 13F amendments (the current
report by default), and the 402 for Free. The 503 for unreadable coverage is
checked on the handler's coverage check directly (a served version always holds the table).

Expected rows come from the published DuckDB file itself (the oracle), sorted here in Python by
the spec's rules."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import duckdb
import pytest

from findata.api.endpoints.holdings import require_coverage
from findata.api.errors import ApiError
from findata.published.served_copy import open_served_copy
from tests.api.endpoints.api_calls import (
    QUARTER_TEXT,
    assert_bad_request,
    assert_upgrade_required,
    fetch_rows,
    get,
    issuers_of_entities,
    rows_of,
    walk_bare_counted_pages,
)
from tests.api.server import RunningApi

MANAGER_TEXT = "Invalid manager_id: '{}'. Must be a positive integer."


def _positions(
    connection: duckdb.DuckDBPyConnection, entity_ids: list[int], superseded: bool = False
) -> list[dict[str, Any]]:
    """The published positions in ``entity_ids``: the current reports' (the endpoint's default),
    or every filing's with ``superseded``."""
    marks = ", ".join("?" for _ in entity_ids)
    current = "" if superseded else " AND h.is_current"
    return fetch_rows(
        connection,
        "SELECT h.*, m.manager_name FROM institutional_holdings h "
        f"LEFT JOIN managers m USING (manager_id) WHERE h.entity_id IN ({marks}){current}",
        *entity_ids,
    )


def _security_of(connection: duckdb.DuckDBPyConnection, ticker: str) -> int:
    ((entity_id,),) = connection.execute(
        "SELECT entity_id FROM ticker_history WHERE ticker = ? AND valid_to IS NULL", [ticker]
    ).fetchall()
    return entity_id


def _walk(api: RunningApi, key: str, path: str, **params: Any) -> list[dict[str, Any]]:
    """Every row of a query, page by page: each page the counted envelope, warnings allowed."""
    pages = walk_bare_counted_pages(api, key, path, **params)
    for body in pages:
        assert set(body) - {"warnings"} == {"data", "count", "next_cursor", "meta"}
    return rows_of(pages)


def _spec_order(position: dict[str, Any]) -> tuple:
    """report_date, shares, manager_id descending; then accession, line_number ascending."""
    day = position["report_date"]
    day = day if isinstance(day, dt.date) else dt.date.fromisoformat(day)
    return (
        -day.toordinal(),
        -position["shares"],
        -position["manager_id"],
        position["accession"],
        position["line_number"],
    )


def _keys(rows: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(row["accession"], row["line_number"]) for row in rows]


def _expected(positions: list[dict[str, Any]], **equal: Any) -> list[tuple[str, int]]:
    kept = [p for p in positions if all(p[name] == value for name, value in equal.items())]
    return _keys(sorted(kept, key=_spec_order))


def test_envelope_and_whole_walk(
    api: RunningApi, pro_key: str, scenarios: dict, published_db: duckdb.DuckDBPyConnection
) -> None:
    ticker = scenarios["holdings"]["ticker"]
    security = _security_of(published_db, ticker)
    positions = _positions(published_db, [security])
    first = get(api, pro_key, f"/v1/holdings/{ticker}", limit=4)
    assert first.status_code == 200, first.text
    assert first.headers["Cache-Control"] == "public, max-age=86400"
    body = first.json()
    assert list(body) == ["data", "count", "next_cursor", "meta"]
    assert body["count"] == 4 and body["meta"]["has_more"] is True
    row = body["data"][0]
    assert {"report_date", "shares", "manager_id", "manager_name", "value_usd", "cusip"} <= set(row)
    assert row["entity_id"] == security and row["ticker"] == ticker

    walked = _walk(api, pro_key, f"/v1/holdings/{ticker}", limit=13)
    keys = _keys(walked)
    assert len(set(keys)) == len(keys) == len(positions)
    assert keys == _expected(positions)
    assert [_spec_order(r) for r in walked] == sorted(_spec_order(r) for r in walked)
    names = {p["manager_id"]: p["manager_name"] for p in positions}
    assert all(row["manager_name"] == names[row["manager_id"]] for row in walked)
    assert len({row["report_date"] for row in walked}) >= 4


def test_quarter_filter(
    api: RunningApi, pro_key: str, scenarios: dict, published_db: duckdb.DuckDBPyConnection
) -> None:
    holdings = scenarios["holdings"]
    assert len(holdings["quarters"]) >= 4
    positions = _positions(published_db, [_security_of(published_db, holdings["ticker"])])
    for quarter in holdings["quarters"][-4:]:
        walked = _walk(api, pro_key, f"/v1/holdings/{holdings['ticker']}", limit=2, quarter=quarter)
        assert walked, quarter
        assert {row["report_date"] for row in walked} == {quarter}
        assert _keys(walked) == _expected(positions, report_date=dt.date.fromisoformat(quarter))
    # a real quarter end with no filings gives no rows
    empty = get(api, pro_key, f"/v1/holdings/{holdings['ticker']}", quarter="1999-12-31").json()
    assert empty["data"] == [] and empty["count"] == 0 and empty["next_cursor"] is None


def test_manager_filter(
    api: RunningApi, pro_key: str, scenarios: dict, published_db: duckdb.DuckDBPyConnection
) -> None:
    holdings = scenarios["holdings"]
    path = f"/v1/holdings/{holdings['ticker']}"
    positions = _positions(published_db, [_security_of(published_db, holdings["ticker"])])
    manager = holdings["manager_id"]
    walked = _walk(api, pro_key, path, limit=3, manager_id=str(manager))
    assert len({row["report_date"] for row in walked}) >= 4
    assert {row["manager_id"] for row in walked} == {manager}
    assert _keys(walked) == _expected(positions, manager_id=manager)
    # "50.0" reads as 50 (rule 5)
    assert _walk(api, pro_key, path, limit=100, manager_id=f"{manager}.0") == walked
    quarter = holdings["quarters"][-1]
    both = _walk(api, pro_key, path, limit=100, manager_id=str(manager), quarter=quarter)
    assert _keys(both) == _expected(
        positions, manager_id=manager, report_date=dt.date.fromisoformat(quarter)
    )
    assert get(api, pro_key, path, manager_id="1").json()["data"] == []


def test_parameter_texts_come_before_the_plan(
    api: RunningApi, pro_key: str, free_key: str, scenarios: dict
) -> None:
    path = f"/v1/holdings/{scenarios['holdings']['ticker']}"
    for key in (pro_key, free_key):
        for value in ("2025-06-29", "2025-02-30", "2025-6-30", "abc", "2025-12-31T00:00"):
            assert_bad_request(get(api, key, path, quarter=value), QUARTER_TEXT.format(value))
        for value in ("0", "-1", "abc", "1.5", "1e3"):
            assert_bad_request(get(api, key, path, manager_id=value), MANAGER_TEXT.format(value))
        assert_bad_request(get(api, key, path, limit="x"), "limit must be a positive integer")
    assert_upgrade_required(get(api, free_key, path), "holdings")
    assert_upgrade_required(
        get(api, free_key, path, quarter=scenarios["holdings"]["quarters"][0], manager_id="7"),
        "holdings",
    )
    assert_upgrade_required(get(api, free_key, "/v1/holdings/NOSUCHTICKER"), "holdings")


def test_share_classes_and_entity_ids(
    api: RunningApi, pro_key: str, scenarios: dict, published_db: duckdb.DuckDBPyConnection
) -> None:
    classes = scenarios["share_classes"]
    securities = sorted(classes["security_entity_ids"])
    positions = _positions(published_db, securities)
    shared = get(api, pro_key, f"/v1/holdings/{classes['shared_ticker']}", limit=5000).json()
    assert _keys(shared["data"]) == _expected(positions)
    assert {row["entity_id"] for row in shared["data"]} == set(securities)
    assert any(
        warning.startswith(f"Ticker {classes['shared_ticker']} names more than one share class")
        for warning in shared["warnings"]
    )
    by_issuer = _walk(
        api, pro_key, "/v1/holdings", limit=25, entity_id=str(classes["issuer_entity_id"])
    )
    assert by_issuer == shared["data"]

    for class_ticker in classes["class_tickers"]:
        security = _security_of(published_db, class_ticker)
        one = get(api, pro_key, f"/v1/holdings/{class_ticker}", limit=5000).json()
        assert "warnings" not in one
        assert _keys(one["data"]) == _expected(positions, entity_id=security)
        by_security = get(api, pro_key, "/v1/holdings", entity_id=str(security), limit=5000).json()
        assert by_security["data"] == one["data"]


def test_ambiguous_and_unknown_tickers(
    api: RunningApi, pro_key: str, scenarios: dict, published_db: duckdb.DuckDBPyConnection
) -> None:
    ambiguous = scenarios["ambiguous"]
    issuers = issuers_of_entities(published_db, ambiguous["entity_ids"])
    now_ambiguous = published_db.execute(
        "SELECT count(DISTINCT issuer_entity_id) FROM ticker_history WHERE ticker = ? "
        "AND valid_to IS NULL",
        [ambiguous["ticker"]],
    ).fetchone()
    assert now_ambiguous is not None
    if now_ambiguous[0] > 1:  # the holdings ticker is resolved today
        response = get(api, pro_key, f"/v1/holdings/{ambiguous['ticker']}")
        assert response.status_code == 409, response.text
        body = response.json()
        assert body["candidates"] == {ambiguous["ticker"]: issuers}
        assert body["hint"] == "pass entity_id="
    for issuer in issuers:
        served = get(api, pro_key, "/v1/holdings", entity_id=str(issuer), limit=1)
        assert served.status_code == 200, served.text
    missing = get(api, pro_key, "/v1/holdings/ZZZZQ")
    assert missing.status_code == 404
    assert missing.json()["detail"] == "No matching entities for: ZZZZQ"


def test_coverage_unavailable_without_the_holdings_table(tmp_path: Path) -> None:
    # a version published without the holdings dataset, opened as the API opens one
    version = tmp_path / "no-holdings.duckdb"
    with duckdb.connect(str(version)) as writing:
        writing.execute("CREATE TABLE managers AS SELECT 1 AS manager_id")
    copy = open_served_copy(version, 2**20)
    try:
        assert copy.datasets == {"managers"}
        with pytest.raises(ApiError) as refused:
            require_coverage(SimpleNamespace(lease=copy))  # type: ignore[arg-type]
    finally:
        copy.connection.close()
    assert refused.value.status == 503
    assert refused.value.body() == {
        "error": "coverage_unavailable",
        "code": "coverage_unavailable",
        "status": 503,
        "detail": "Holdings coverage is not available",
    }


def _quarter_of_manager(
    api: RunningApi, key: str, manager: int, quarter: str, **params: Any
) -> list[dict[str, Any]]:
    return _walk(api, key, f"/v1/managers/{manager}/holdings", limit=7, quarter=quarter, **params)


def test_a_restatement_replaces_the_quarters_report(
    api: RunningApi, pro_key: str, scenarios: dict, published_db: duckdb.DuckDBPyConnection
) -> None:
    case = scenarios["holdings_amendments"]
    manager, restated = case["manager_id"], case["restatement"]
    served = _quarter_of_manager(api, pro_key, manager, restated["report_date"])
    assert {row["accession"] for row in served} == {restated["amendment_accession"]}
    assert {(row["is_amendment"], row["amendment_type"], row["is_current"]) for row in served} == {
        (True, "RESTATEMENT", True)
    }
    shares = {row["cusip"]: row["shares"] for row in served if row["put_call"] is None}
    assert restated["dropped_cusip"] not in shares
    every = _quarter_of_manager(
        api, pro_key, manager, restated["report_date"], include_superseded="TRUE"
    )
    original = [row for row in every if row["accession"] == restated["original_accession"]]
    assert original and not any(row["is_current"] or row["is_amendment"] for row in original)
    assert sorted(_keys(every)) == sorted(_keys(served) + _keys(original))
    first = {row["cusip"]: row["shares"] for row in original if row["put_call"] is None}
    assert restated["dropped_cusip"] in first
    assert shares[restated["corrected_cusip"]] != first[restated["corrected_cusip"]]
    # by ticker: the corrected position once, as restated
    (entity_id,) = {
        row["entity_id"] for row in served if row["cusip"] == restated["corrected_cusip"]
    }
    (ticker,) = {row["ticker"] for row in served if row["entity_id"] == entity_id}
    by_ticker = get(
        api, pro_key, "/v1/holdings", entity_id=str(entity_id), manager_id=str(manager),
        quarter=restated["report_date"], limit=100,
    ).json()["data"]  # fmt: skip
    assert [(r["ticker"], r["shares"]) for r in by_ticker if r["put_call"] is None] == [
        (ticker, shares[restated["corrected_cusip"]])
    ]


def test_new_holdings_add_to_the_quarters_report(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    case = scenarios["holdings_amendments"]
    manager, added = case["manager_id"], case["new_holdings"]
    served = _quarter_of_manager(api, pro_key, manager, added["report_date"])
    by_filing: dict[str, list[dict[str, Any]]] = {}
    for row in served:
        by_filing.setdefault(row["accession"], []).append(row)
    assert set(by_filing) == {added["original_accession"], added["amendment_accession"]}
    amendment = by_filing[added["amendment_accession"]]
    assert sorted(row["cusip"] for row in amendment) == sorted(added["added_cusips"])
    assert {(row["amendment_type"], row["is_current"]) for row in amendment} == {
        ("NEW HOLDINGS", True)
    }
    assert not {row["cusip"] for row in by_filing[added["original_accession"]]} & set(
        added["added_cusips"]
    )
    # nothing is superseded in that quarter
    every = _quarter_of_manager(
        api, pro_key, manager, added["report_date"], include_superseded="true"
    )
    assert every == served


def test_no_position_twice_in_the_current_reports(
    api: RunningApi, pro_key: str, scenarios: dict, published_db: duckdb.DuckDBPyConnection
) -> None:
    manager = scenarios["holdings_amendments"]["manager_id"]
    served = _walk(api, pro_key, f"/v1/managers/{manager}/holdings", limit=500)
    current = fetch_rows(
        published_db,
        "SELECT accession, line_number FROM institutional_holdings "
        "WHERE manager_id = ? AND is_current",
        manager,
    )
    assert sorted(_keys(served)) == sorted(_keys(current))
    # one filing of each kind per quarter: an original or a restatement, and new holdings
    reports: dict[str, set[tuple[bool, str | None]]] = {}
    for row in served:
        reports.setdefault(row["report_date"], set()).add(
            (row["amendment_type"] == "NEW HOLDINGS", row["accession"])
        )
    for quarter, filings in reports.items():
        complete = [accession for adds, accession in filings if not adds]
        assert len(complete) == 1, (quarter, filings)


def test_include_superseded_is_a_flag_checked_before_the_plan(
    api: RunningApi, pro_key: str, free_key: str, scenarios: dict
) -> None:
    manager = scenarios["holdings_amendments"]["manager_id"]
    ticker = scenarios["holdings"]["ticker"]
    for path in (f"/v1/managers/{manager}/holdings", f"/v1/holdings/{ticker}"):
        assert_bad_request(
            get(api, free_key, path, include_superseded="no"),
            "include_superseded must be true or false",
        )
        for value in ("yes", "1", "0", "null"):
            assert_bad_request(
                get(api, pro_key, path, include_superseded=value),
                "include_superseded must be true or false",
            )
