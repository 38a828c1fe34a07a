"""``/v1/insiders`` over real HTTP on the published small demo: the counted envelope with
``tickers``, ``data_through`` and ``meta.entity_id_is``, each flag and its default, the window,
the row order walked page by page, company-level resolution, and the plan gate (400 before 402).

Expected rows come from the published DuckDB file itself (the oracle), filtered and sorted here in
Python by the spec's rules."""

from __future__ import annotations

import datetime as dt
from typing import Any

import duckdb
import httpx
import pytest

from tests.api.endpoints.api_calls import (
    assert_bad_request,
    assert_upgrade_required,
    fetch_rows,
    get,
    issuers_of_entities,
    rows_of,
    walk_cursor_pages,
    without_change_cursor,
)
from tests.api.server import RunningApi

FLAGS = ("include_amendments", "include_derivatives", "include_uncoded")


@pytest.fixture(scope="module")
def company(published_db: duckdb.DuckDBPyConnection, scenarios: dict) -> dict[str, Any]:
    """The insiders scenario's ticker, its issuer and security, and every line of the issuer."""
    ticker = scenarios["insiders"]["ticker"]
    (security,) = fetch_rows(
        published_db,
        "SELECT entity_id, issuer_entity_id FROM ticker_history WHERE ticker = ? "
        "AND valid_to IS NULL",
        ticker,
    )
    lines = fetch_rows(
        published_db,
        "SELECT * FROM insider_transactions WHERE entity_id = ?",
        security["issuer_entity_id"],
    )
    return {
        "ticker": ticker,
        "issuer": security["issuer_entity_id"],
        "security": security["entity_id"],
        "lines": lines,
    }


def _upgrade(response: httpx.Response) -> None:
    """The spec's 402 for insiders, with no rate-limit headers on it."""
    assert_upgrade_required(response, "insiders")
    assert "X-RateLimit-Limit-Day" not in response.headers


def _walk(api: RunningApi, key: str, path: str, **params: Any) -> list[dict[str, Any]]:
    """Every row of a query, page by page, checking the counted envelope on each page."""
    pages = walk_cursor_pages(api, key, path, counted=True, **params)
    if params.get("limit"):
        assert all(body["count"] <= int(params["limit"]) for body in pages)
    return rows_of(pages)


def _spec_order(line: dict[str, Any]) -> tuple:
    """transaction_date, document_id, derivative first, line sequence — all descending."""
    return (
        str(line["transaction_date"]),
        line["document_id"],
        bool(line["is_derivative"]),
        line["line_sequence"],
    )


def _expected(
    lines: list[dict[str, Any]],
    *,
    amendments: bool = True,
    derivatives: bool = True,
    uncoded: bool = False,
    start: str | None = None,
    end: str | None = None,
) -> list[tuple[str, int]]:
    """The (document_id, line_sequence) keys the spec's order gives for these filters."""
    kept = [
        line
        for line in lines
        if (amendments or not line["is_amendment"])
        and (derivatives or not line["is_derivative"])
        and (uncoded or line["is_coded"])
        and (start is None or str(line["transaction_date"]) >= start)
        and (end is None or str(line["transaction_date"]) <= end)
    ]
    kept.sort(key=_spec_order, reverse=True)
    return [(line["document_id"], line["line_sequence"]) for line in kept]


def _keys(rows: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(row["document_id"], row["line_sequence"]) for row in rows]


def test_the_scenario_has_what_the_flags_are_about(company: dict[str, Any]) -> None:
    lines = company["lines"]
    assert any(line["is_amendment"] and line["form_type"] == "4/A" for line in lines)
    assert any(line["is_derivative"] for line in lines)
    assert any(not line["is_coded"] for line in lines)


def test_envelope_and_row(
    api: RunningApi, pro_key: str, company: dict[str, Any], published_db: duckdb.DuckDBPyConnection
) -> None:
    response = get(api, pro_key, f"/v1/insiders/{company['ticker']}", limit=5)
    assert response.status_code == 200, response.text
    assert response.headers["Cache-Control"] == "public, max-age=86400"
    body = response.json()
    assert list(body) == ["data", "count", "next_cursor", "tickers", "data_through", "meta"]
    assert body["count"] == 5
    assert isinstance(body["next_cursor"], str)
    assert without_change_cursor(body["meta"]) == {
        "has_more": True,
        "next_cursor": body["next_cursor"],
        "entity_id_is": "issuer",
    }
    assert body["tickers"] == [company["ticker"]]
    ((latest,),) = published_db.execute(
        "SELECT max(transaction_date) FROM insider_transactions"
    ).fetchall()
    assert body["data_through"] == latest.isoformat()
    row = body["data"][0]
    assert list(row)[:6] == [
        "entity_id",
        "ticker",
        "entity_name",
        "transaction_date",
        "filing_date",
        "form_type",
    ]
    assert {"document_id", "line_sequence", "is_derivative", "shares", "owner_name"} <= set(row)
    # the row's entity_id is the issuer, as meta.entity_id_is says
    assert {r["entity_id"] for r in body["data"]} == {company["issuer"]}
    dt.date.fromisoformat(row["transaction_date"])
    dt.date.fromisoformat(row["filing_date"])


def test_default_walk_is_in_spec_order_without_skips(
    api: RunningApi, pro_key: str, company: dict[str, Any]
) -> None:
    walked = _walk(api, pro_key, f"/v1/insiders/{company['ticker']}", limit=7)
    keys = _keys(walked)
    assert len(set(keys)) == len(keys)
    # defaults: amendments and derivative lines in, uncoded lines out
    assert keys == _expected(company["lines"])
    assert any(row["form_type"] == "4/A" for row in walked)
    assert any(row["is_derivative"] for row in walked)
    assert all(row["is_coded"] for row in walked)
    whole = get(api, pro_key, f"/v1/insiders/{company['ticker']}", limit=5000).json()
    assert whole["data"] == walked and whole["next_cursor"] is None


def test_derivative_lines_come_before_the_others_of_a_document(
    api: RunningApi, pro_key: str, company: dict[str, Any]
) -> None:
    walked = _walk(api, pro_key, f"/v1/insiders/{company['ticker']}", limit=1000)
    mixed = {
        row["document_id"]
        for row in walked
        if row["is_derivative"]
        and any(o["document_id"] == row["document_id"] and not o["is_derivative"] for o in walked)
    }
    assert mixed, "the scenario has a document with both kinds of line"
    for document in mixed:
        kinds = [row["is_derivative"] for row in walked if row["document_id"] == document]
        assert kinds == sorted(kinds, reverse=True)


@pytest.mark.parametrize(
    ("params", "filters"),
    [
        ({"include_amendments": "false"}, {"amendments": False}),
        ({"include_amendments": "FALSE"}, {"amendments": False}),
        ({"include_amendments": "True"}, {}),
        ({"include_derivatives": "False"}, {"derivatives": False}),
        ({"include_derivatives": "tRuE"}, {}),
        ({"include_uncoded": "true"}, {"uncoded": True}),
        ({"include_uncoded": "TRUE"}, {"uncoded": True}),
        ({"include_uncoded": "false"}, {}),
        (
            {"include_amendments": "false", "include_derivatives": "false", "include_uncoded": "t"},
            None,
        ),
        (
            {"include_amendments": "false", "include_derivatives": "false", "include_uncoded": ""},
            {"amendments": False, "derivatives": False},
        ),
    ],
)
def test_each_flag(
    api: RunningApi,
    pro_key: str,
    company: dict[str, Any],
    params: dict[str, str],
    filters: dict[str, bool] | None,
) -> None:
    path = f"/v1/insiders/{company['ticker']}"
    if filters is None:
        assert_bad_request(
            get(api, pro_key, path, **params), "include_uncoded must be true or false"
        )
        return
    walked = _walk(api, pro_key, path, limit=50, **params)
    expected = _expected(company["lines"], **filters)
    assert _keys(walked) == expected
    assert len(expected) != len(_expected(company["lines"])) or not filters


def test_flags_exclude_what_they_name(
    api: RunningApi, pro_key: str, company: dict[str, Any]
) -> None:
    path = f"/v1/insiders/{company['ticker']}"
    originals = _walk(api, pro_key, path, limit=1000, include_amendments="false")
    assert originals and all(row["form_type"] == "4" for row in originals)
    plain = _walk(api, pro_key, path, limit=1000, include_derivatives="false")
    assert plain and not any(row["is_derivative"] for row in plain)
    everything = _walk(api, pro_key, path, limit=1000, include_uncoded="true")
    holding_lines = [row for row in everything if not row["is_coded"]]
    assert holding_lines and all(row["transaction_code"] is None for row in holding_lines)
    assert len(everything) == len(company["lines"])


def test_bad_flags(api: RunningApi, pro_key: str, free_key: str, company: dict[str, Any]) -> None:
    path = f"/v1/insiders/{company['ticker']}"
    for flag in FLAGS:
        for value in ("yes", "1", "0", "tru", "true ", "null"):
            assert_bad_request(
                get(api, pro_key, path, **{flag: value}), f"{flag} must be true or false"
            )
        # rule 6: the flags are checked before the plan
        assert_bad_request(
            get(api, free_key, path, **{flag: "no"}), f"{flag} must be true or false"
        )


def test_window_on_transaction_date(api: RunningApi, pro_key: str, company: dict[str, Any]) -> None:
    path = f"/v1/insiders/{company['ticker']}"
    dates = sorted({str(line["transaction_date"]) for line in company["lines"]})
    start, end = dates[len(dates) // 4], dates[3 * len(dates) // 4]
    walked = _walk(api, pro_key, path, limit=9, start=start, end=end, include_uncoded="true")
    assert _keys(walked) == _expected(company["lines"], uncoded=True, start=start, end=end)
    assert walked and all(start <= row["transaction_date"] <= end for row in walked)
    only_day = _walk(api, pro_key, path, limit=100, start=dates[-1], end=dates[-1])
    assert {row["transaction_date"] for row in only_day} <= {dates[-1]}
    # a known ticker with no rows in the window: 200 with an empty data array
    after_the_last = dt.date.fromisoformat(dates[-1]) + dt.timedelta(days=1)
    empty = get(api, pro_key, path, start=after_the_last.isoformat())
    assert empty.status_code == 200
    assert (empty.json()["data"], empty.json()["count"], empty.json()["next_cursor"]) == (
        [],
        0,
        None,
    )


def test_date_texts(api: RunningApi, pro_key: str, free_key: str, company: dict[str, Any]) -> None:
    path = f"/v1/insiders/{company['ticker']}"
    assert_bad_request(
        get(api, pro_key, path, start="2024-1-01"), "Invalid start date format (YYYY-MM-DD)"
    )
    assert_bad_request(
        get(api, pro_key, path, start="2024-02-30"), "Invalid start date format (YYYY-MM-DD)"
    )
    assert_bad_request(
        get(api, pro_key, path, end="2024-13-01"),
        "Invalid end date: '2024-13-01' (expected a date from 0001-01-01 to 9999-12-31 on this "
        "endpoint)",
    )
    assert_bad_request(
        get(api, pro_key, path, start="2024-03-10", end="2024-03-09"),
        "end (2024-03-09) is before start (2024-03-10)",
    )
    # before the plan check, on Free too
    assert_bad_request(
        get(api, free_key, path, start="2024-03-10", end="2024-03-09"),
        "end (2024-03-09) is before start (2024-03-10)",
    )
    assert_bad_request(get(api, free_key, path, limit="0"), "limit must be a positive integer")


def test_free_is_refused_after_validation(
    api: RunningApi, free_key: str, company: dict[str, Any]
) -> None:
    path = f"/v1/insiders/{company['ticker']}"
    _upgrade(get(api, free_key, path))
    _upgrade(get(api, free_key, path, include_amendments="FALSE", start="2024-01-01", limit="5"))
    _upgrade(get(api, free_key, "/v1/insiders", entity_id=str(company["issuer"])))
    _upgrade(get(api, free_key, "/v1/insiders/NOSUCHTICKER"))  # the plan before the subjects


def test_paging_limits_and_cursor(api: RunningApi, pro_key: str, company: dict[str, Any]) -> None:
    path = f"/v1/insiders/{company['ticker']}"
    big = get(api, pro_key, path, limit="999999").json()
    assert big["count"] == len(_expected(company["lines"])) and big["next_cursor"] is None
    assert "limit" not in big["meta"]
    assert get(api, pro_key, path, limit="3.0").json()["count"] == 3
    first = get(api, pro_key, path, limit=2).json()
    assert_bad_request(
        get(api, pro_key, path, limit=2, include_uncoded="true", cursor=first["next_cursor"]),
        "Invalid cursor: it belongs to a different request. Page with the same path and "
        "parameters as the first page (only limit may change).",
    )
    # only limit may change between pages
    second = get(api, pro_key, path, limit=5, cursor=first["next_cursor"]).json()
    assert _keys(first["data"] + second["data"]) == _expected(company["lines"])[:7]


def test_entity_id_selects_the_company(
    api: RunningApi, pro_key: str, company: dict[str, Any], published_db: duckdb.DuckDBPyConnection
) -> None:
    by_ticker = _walk(api, pro_key, f"/v1/insiders/{company['ticker']}", limit=1000)
    # the tickers of the company's securities today, every kind
    today = dt.datetime.now(dt.UTC).date()
    traded = published_db.execute(
        "SELECT DISTINCT ticker FROM ticker_history WHERE issuer_entity_id = ? "
        "AND entity_grain = 'security' AND valid_from <= ? "
        "AND (valid_to IS NULL OR valid_to >= ?) ORDER BY ticker",
        [company["issuer"], today, today],
    ).fetchall()
    for entity_id in (company["issuer"], company["security"]):
        response = get(api, pro_key, "/v1/insiders", entity_id=str(entity_id), limit=1000)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["data"] == by_ticker
        assert company["ticker"] in body["tickers"]
        assert body["tickers"] == [ticker for (ticker,) in traded]
    assert_bad_request(
        get(api, pro_key, f"/v1/insiders/{company['ticker']}", entity_id=str(company["issuer"])),
        "Provide either a ticker in the path or an entity_id parameter, not both.",
    )
    assert_bad_request(
        get(api, pro_key, "/v1/insiders", entity_id="abc"),
        "Invalid entity_id: 'abc'. Must be a positive integer.",
    )


def test_company_level_resolution(
    api: RunningApi, pro_key: str, scenarios: dict, published_db: duckdb.DuckDBPyConnection
) -> None:
    classes = scenarios["share_classes"]
    response = get(api, pro_key, f"/v1/insiders/{classes['shared_ticker']}")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["tickers"] == [classes["shared_ticker"]]
    assert {row["entity_id"] for row in body["data"]} <= {classes["issuer_entity_id"]}
    assert any(
        warning.startswith(f"Ticker {classes['shared_ticker']} names more than one share class")
        and f"(entity_id {classes['issuer_entity_id']})" in warning
        for warning in body["warnings"]
    )

    ambiguous = scenarios["ambiguous"]
    issuers = issuers_of_entities(published_db, ambiguous["entity_ids"])
    response = get(api, pro_key, f"/v1/insiders/{ambiguous['ticker']}", end=ambiguous["date"])
    assert response.status_code == 409, response.text
    body = response.json()
    assert body["code"] == body["error"] == "ambiguous_ticker"
    assert body["hint"] == "pass entity_id="
    assert body["candidates"] == {ambiguous["ticker"]: issuers}
    assert all(isinstance(candidate, int) for candidate in issuers)

    missing = get(api, pro_key, "/v1/insiders/ZZZZQ")
    assert missing.status_code == 404
    assert missing.json()["detail"] == "No matching entities for: ZZZZQ"


def test_unknown_parameter_is_named(api: RunningApi, pro_key: str, company: dict[str, Any]) -> None:
    body = get(api, pro_key, f"/v1/insiders/{company['ticker']}", limit=1, **{"from": "x"}).json()
    assert body["warnings"] == ["Unknown parameter ignored: 'from'. Did you mean 'start'?"]
