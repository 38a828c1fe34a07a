"""``/v1/managers`` and ``/v1/managers/{manager_id}/holdings`` over real HTTP on the published
small demo: the counted envelope, search and its 400 (before the plan), the row orders walked page
by page, the quarter filter, and the manager id checked after the 402 (Free + bad id → 402;
Pro + bad id → 400; Pro + unknown id → 404).

Expected rows come from the published DuckDB file itself (the oracle), sorted here in Python by
the spec's rules."""

from __future__ import annotations

import datetime as dt
from typing import Any

import duckdb

from findata.contracts.endpoints import load_endpoint_contract
from tests.api.endpoints.api_calls import (
    QUARTER_TEXT,
    assert_bad_request,
    assert_upgrade_required,
    fetch_rows,
    get,
    json_dates,
    rows_of,
    walk_bare_counted_pages,
    without_change_cursor,
)
from tests.api.server import RunningApi


def _walk(api: RunningApi, key: str, path: str, **params: Any) -> list[dict[str, Any]]:
    """Every row of a query, page by page: each page exactly the counted envelope, in order."""
    pages = walk_bare_counted_pages(api, key, path, **params)
    for body in pages:
        assert list(body) == ["data", "count", "next_cursor", "meta"]
    return rows_of(pages)


def _manager_order(manager: dict[str, Any]) -> tuple[str, int]:
    return (manager["manager_name"].lower(), manager["manager_id"])


def _position_order(position: dict[str, Any]) -> tuple:
    """report_date, value_usd descending; then accession, line_number ascending."""
    day = position["report_date"]
    day = day if isinstance(day, dt.date) else dt.date.fromisoformat(day)
    return (
        -day.toordinal(),
        -position["value_usd"],
        position["accession"],
        position["line_number"],
    )


# ----- /v1/managers -----------------------------------------------------------------------------


def test_all_managers_walked_in_name_order(
    api: RunningApi, pro_key: str, published_db: duckdb.DuckDBPyConnection
) -> None:
    managers = fetch_rows(published_db, "SELECT * FROM managers")
    assert len(managers) >= 3
    walked = _walk(api, pro_key, "/v1/managers", limit=2)
    assert walked == [json_dates(m) for m in sorted(managers, key=_manager_order)]
    assert list(walked[0])[:2] == ["manager_id", "manager_name"]
    assert "manager_name_folded" not in walked[0]
    # an empty search is no search
    assert _walk(api, pro_key, "/v1/managers", limit=1000, search="") == walked


def test_search(
    api: RunningApi, pro_key: str, scenarios: dict, published_db: duckdb.DuckDBPyConnection
) -> None:
    wanted = scenarios["managers"]
    managers = fetch_rows(published_db, "SELECT * FROM managers")
    matching = sorted(
        (m for m in managers if wanted["search"].lower() in m["manager_name"].lower()),
        key=_manager_order,
    )
    assert matching and len(matching) < len(managers)
    for search in (wanted["search"], wanted["search"].upper(), wanted["search"].lower()):
        walked = _walk(api, pro_key, "/v1/managers", limit=1, search=search)
        assert walked == [json_dates(m) for m in matching]
    assert wanted["manager_id"] in {m["manager_id"] for m in matching}
    by_cik = _walk(api, pro_key, "/v1/managers", limit=5, search=str(wanted["manager_id"]))
    assert [m["manager_id"] for m in by_cik] == [wanted["manager_id"]]
    padded = _walk(api, pro_key, "/v1/managers", limit=5, search=f"000{wanted['manager_id']}")
    assert padded == by_cik
    nothing = get(api, pro_key, "/v1/managers", search="%_zz-no-such-manager").json()
    nothing["meta"] = without_change_cursor(nothing["meta"])
    assert nothing == {
        "data": [],
        "count": 0,
        "next_cursor": None,
        "meta": {"has_more": False, "next_cursor": None},
    }


def test_search_text_and_plan(
    api: RunningApi, pro_key: str, free_key: str, scenarios: dict
) -> None:
    for key in (pro_key, free_key):
        for value in ("a", " b ", "  "):
            assert_bad_request(
                get(api, key, "/v1/managers", search=value), "search must be at least 2 characters"
            )
        assert_bad_request(
            get(api, key, "/v1/managers", limit="-3"), "limit must be a positive integer"
        )
    assert_upgrade_required(get(api, free_key, "/v1/managers"), "managers")
    assert_upgrade_required(
        get(api, free_key, "/v1/managers", search=scenarios["managers"]["search"]), "managers"
    )
    warned = get(api, pro_key, "/v1/managers", q=scenarios["managers"]["search"]).json()
    assert warned["warnings"] == ["Unknown parameter ignored: 'q'. Did you mean 'search'?"]


# ----- /v1/managers/{manager_id}/holdings -------------------------------------------------------


def served(row: dict[str, Any]) -> dict[str, Any]:
    """A published holdings row as manager holdings serves it: the contract's fields."""
    fields = load_endpoint_contract("manager_holdings").fields.identity
    return {name: value for name, value in json_dates(row).items() if name in fields}


def test_manager_holdings_walked_in_order(
    api: RunningApi, pro_key: str, scenarios: dict, published_db: duckdb.DuckDBPyConnection
) -> None:
    manager = scenarios["managers"]["manager_id"]
    every = fetch_rows(
        published_db, "SELECT * FROM institutional_holdings WHERE manager_id = ?", manager
    )
    positions = [p for p in every if p["is_current"]]  # the current reports, by default
    assert len(positions) < len(every), "the scenario manager restated a report"
    path = f"/v1/managers/{manager}/holdings"
    first = get(api, pro_key, path, limit=3)
    assert first.status_code == 200, first.text
    assert first.headers["Cache-Control"] == "public, max-age=86400"
    row = first.json()["data"][0]
    assert {"report_date", "value_usd", "ticker", "entity_id", "shares", "cusip"} <= set(row)

    walked = _walk(api, pro_key, path, limit=40)
    keys = [(r["accession"], r["line_number"]) for r in walked]
    assert len(set(keys)) == len(keys) == len(positions)
    expected = sorted(positions, key=_position_order)
    assert keys == [(p["accession"], p["line_number"]) for p in expected]
    assert walked == [served(p) for p in expected]  # the contract's columns, as stored
    assert {r["manager_id"] for r in walked} == {manager}
    assert len({r["report_date"] for r in walked}) >= 4
    superseded = _walk(api, pro_key, path, limit=40, include_superseded="true")
    assert superseded == [served(p) for p in sorted(every, key=_position_order)]


def test_manager_holdings_by_quarter(
    api: RunningApi,
    pro_key: str,
    free_key: str,
    scenarios: dict,
    published_db: duckdb.DuckDBPyConnection,
) -> None:
    manager = scenarios["managers"]["manager_id"]
    path = f"/v1/managers/{manager}/holdings"
    for quarter in scenarios["holdings"]["quarters"][:2]:
        positions = fetch_rows(
            published_db,
            "SELECT * FROM institutional_holdings WHERE manager_id = ? AND report_date = ? "
            "AND is_current",
            manager,
            quarter,
        )
        walked = _walk(api, pro_key, path, limit=4, quarter=quarter)
        assert walked and {r["report_date"] for r in walked} == {quarter}
        assert [(r["accession"], r["line_number"]) for r in walked] == [
            (p["accession"], p["line_number"]) for p in sorted(positions, key=_position_order)
        ]
    for key in (pro_key, free_key):  # quarter is checked before the plan
        assert_bad_request(
            get(api, key, path, quarter="2024-04-30"), QUARTER_TEXT.format("2024-04-30")
        )


def test_manager_id_is_checked_after_the_plan(
    api: RunningApi, pro_key: str, free_key: str, scenarios: dict
) -> None:
    manager = scenarios["managers"]["manager_id"]
    for bad in ("abc", "0", "-5", "1.5", "7e2"):
        assert_upgrade_required(get(api, free_key, f"/v1/managers/{bad}/holdings"), "managers")
        assert_bad_request(
            get(api, pro_key, f"/v1/managers/{bad}/holdings"),
            f"Invalid manager_id: '{bad}'. Must be a positive integer.",
        )
    assert_upgrade_required(get(api, free_key, f"/v1/managers/{manager}/holdings"), "managers")
    assert_upgrade_required(get(api, free_key, "/v1/managers/1/holdings"), "managers")

    unknown = get(api, pro_key, "/v1/managers/1/holdings")
    assert unknown.status_code == 404, unknown.text
    assert unknown.json() == {
        "error": "not_found",
        "code": "not_found",
        "status": 404,
        "detail": "No manager with id 1",
    }
    # a whole number written with a decimal point reads as that number (rule 5)
    same = get(api, pro_key, f"/v1/managers/{manager}.0/holdings", limit=5).json()
    assert (
        same["data"]
        == get(api, pro_key, f"/v1/managers/{manager}/holdings", limit=5).json()["data"]
    )
