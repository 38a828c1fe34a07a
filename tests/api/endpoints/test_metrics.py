"""``/v1/metrics`` over real HTTP on the published small demo: envelope, every parameter rule and
400 text, point in time (default, ``as_of``, ``view``, ``version``) checked against the published
rows, the restatement scenario, share classes (a shared ticker is ambiguous on metrics, a class
ticker gets its class's price), issuer ids, ambiguity, paging walked page by page and the Free
plan's rules."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from findata.contracts.endpoints import load_endpoint_contract
from tests.api.endpoints.api_calls import (
    assert_ambiguous_candidates_are_objects,
    assert_bad_request,
    assert_entity_id_rules,
    assert_free_plan_history_floor,
    before_as_of,
    get,
    issuer_of,
    json_dates,
    query_published,
    rows_of,
    walk_cursor_pages,
    without_name,
)
from tests.api.server import RunningApi

CONTRACT = load_endpoint_contract("metrics")
IDENTITY = CONTRACT.fields.identity
METRICS = CONTRACT.fields.selectable
RANGE = "from 0005-01-01 to 9999-11-30 on this endpoint"
CANDIDATE_FIELDS = {
    "entity_id", "name", "exchange", "share_class", "last_bar_date", "valid_from", "valid_to",
}  # fmt: skip
PRICE_FIELDS = {"price_entity_id", "price_date", "price_close", "pe_ratio", "pb_ratio"}


def _walk(api: RunningApi, key: str, path: str, **params: Any) -> list[dict[str, Any]]:
    """Every row of a query (200 pages at most), page by page, no page over its limit."""
    pages = walk_cursor_pages(api, key, path, max_pages=200, **params)
    for body in pages:
        assert len(body["data"]) <= body["meta"]["limit"]
    return rows_of(pages)


def _order_key(row: dict[str, Any]) -> tuple[Any, ...]:
    """entity_id, period_end, then the statement: filing date, annual first, accession."""
    annual_first = {"annual": 0, "quarterly": 1}[row["period_type"]]
    return (
        row["entity_id"], row["period_end"], row["filing_date"], annual_first, row["accession"],
    )  # fmt: skip


def _query(api: RunningApi, sql: str, **values: Any) -> list[dict[str, Any]]:
    """Published rows (the test's oracle) with their dates as the API serves them."""
    return [json_dates(row) for row in query_published(api, sql, **values)]


def _published(api: RunningApi, issuer: int) -> list[dict[str, Any]]:
    return _query(api, "SELECT * FROM metrics WHERE issuer_entity_id = $i", i=issuer)


def _expected(rows: list[dict[str, Any]], as_of: str | None = None) -> list[dict[str, Any]]:
    """Per period the latest row known on the day (as_of, else every row published)."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    known = [r for r in rows if as_of is None or r["known_from"] <= as_of]
    for row in sorted(known, key=lambda r: (r["known_from"], r["accession"])):
        latest[(row["period_end"], row["period_type"])] = row
    names = [n for n in IDENTITY + METRICS if n not in ("entity_id", "entity_name")]
    served = [
        {"entity_id": row["issuer_entity_id"], **{n: row[n] for n in names}}
        for row in latest.values()
    ]
    return sorted(served, key=_order_key)


def test_envelope_meta_fields_and_headers(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    ticker = scenarios["restatement"]["ticker"]
    issuer = issuer_of(api, pro_key, ticker)
    response = get(api, pro_key, f"/v1/metrics/{ticker}")
    assert response.status_code == 200, response.text
    assert response.headers["Cache-Control"] == "public, max-age=86400"
    assert "X-Data-Floor" not in response.headers
    body = response.json()
    assert set(body) == {"data", "meta"}
    meta = body["meta"]
    assert meta["tickers_requested"] == [ticker]
    assert meta["tickers_resolved"] == {ticker: issuer}
    (latest,) = _query(api, "SELECT MAX(period_end) AS latest FROM metrics")
    assert meta["data_through"] == latest["latest"]
    assert (meta["count"], meta["limit"], meta["has_more"]) == (20, 20, True)
    assert isinstance(meta["next_cursor"], str)
    row = body["data"][0]
    assert list(row) == [*IDENTITY, *METRICS]
    assert "is_latest" not in row
    assert row["entity_id"] == row["issuer_entity_id"] == issuer


def test_default_view_and_version_are_each_periods_latest_row(
    api: RunningApi, redistribution_key: str, pro_key: str, scenarios: dict
) -> None:
    ticker = scenarios["restatement"]["ticker"]
    issuer = issuer_of(api, pro_key, ticker)
    published = _published(api, issuer)
    rows = _walk(api, redistribution_key, f"/v1/metrics/{ticker}", limit=100)
    assert without_name(rows) == _expected(published)
    # the rows the dataset marks current, one per period
    current = {
        (r["period_end"], r["period_type"], r["accession"]) for r in published if r["is_latest"]
    }
    assert {(r["period_end"], r["period_type"], r["accession"]) for r in rows} == current
    for same in (
        {"view": "latest"},
        {"version": "restated"},
        {"view": "latest", "version": "restated"},
        {"view": "", "version": ""},
    ):
        assert _walk(api, redistribution_key, f"/v1/metrics/{ticker}", limit=100, **same) == rows


def test_as_of_never_uses_later_knowledge(
    api: RunningApi, redistribution_key: str, pro_key: str, scenarios: dict
) -> None:
    ticker = scenarios["restatement"]["ticker"]
    issuer = issuer_of(api, pro_key, ticker)
    published = _published(api, issuer)
    known_days = sorted({row["known_from"] for row in published})
    days = set()
    for day in known_days[:: max(1, len(known_days) // 8)] + known_days[-2:]:
        before = (dt.date.fromisoformat(day) - dt.timedelta(days=1)).isoformat()
        days.update({day, before})
    for day in sorted(days):
        # by entity_id: a ticker is resolved on as_of, before its listing it names nothing
        path_params = {"entity_id": issuer, "as_of": day, "limit": 100}
        rows = _walk(api, redistribution_key, "/v1/metrics", **path_params)
        assert without_name(rows) == _expected(published, day), day
        assert all(row["known_from"] <= day for row in rows)
        assert (
            _walk(
                api,
                redistribution_key,
                "/v1/metrics",
                view="latest",
                version="restated",
                **path_params,
            )
            == rows
        )


def test_the_restatement_scenario(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    case = scenarios["restatement"]
    issuer = issuer_of(api, pro_key, case["ticker"])
    window = {"entity_id": issuer, "start": case["period_end"], "end": case["period_end"]}
    first = dt.date.fromisoformat(case["first_known"])
    restated = dt.date.fromisoformat(case["restated_known"])

    def answer(**params: Any) -> list[dict[str, Any]]:
        response = get(api, pro_key, "/v1/metrics", **window, **params)
        assert response.status_code == 200, response.text
        return response.json()["data"]

    assert answer(as_of=(first - dt.timedelta(days=1)).isoformat()) == []
    original = answer(as_of=first.isoformat())
    assert [r["known_from"] for r in original] == [case["first_known"]]
    assert answer(as_of=(restated - dt.timedelta(days=1)).isoformat()) == original
    after = answer(as_of=restated.isoformat())
    assert [r["known_from"] for r in after] == [case["restated_known"]]
    changed = [
        name for name in ("eps", "net_margin", "pe_ratio") if after[0][name] != original[0][name]
    ]
    assert changed, "the restatement changes the metrics computed from it"
    latest = answer()
    assert latest[0]["known_from"] >= case["restated_known"]
    assert latest[0]["eps"] == after[0]["eps"]


def test_date_texts(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    path = f"/v1/metrics/{scenarios['plain']['ticker']}"
    for bad in ("2025-1-01", "2025-02-30", "x"):
        assert_bad_request(
            get(api, pro_key, path, start=bad), "Invalid start date format (YYYY-MM-DD)"
        )
    for bad in ("0004-12-31", "9999-12-01"):
        assert_bad_request(
            get(api, pro_key, path, start=bad),
            f"Invalid start date: '{bad}' (expected a date {RANGE})",
        )
    for bad in ("0004-12-31", "9999-12-01", "2025-13-01", "x"):
        assert_bad_request(
            get(api, pro_key, path, end=bad), f"Invalid end date: '{bad}' (expected a date {RANGE})"
        )
    assert_bad_request(
        get(api, pro_key, path, start="2025-03-10", end="2025-03-09"),
        "end (2025-03-09) is before start (2025-03-10)",
    )
    for bad in ("2025-02-30", "2025-1-1", "today"):
        assert_bad_request(
            get(api, pro_key, path, as_of=bad),
            f"Invalid as_of date: '{bad}' (expected a real YYYY-MM-DD date)",
        )
    assert_bad_request(
        get(api, pro_key, path, as_of="0004-12-31"),
        "Invalid as_of date: '0004-12-31' (expected a date from 0005-01-01 on this endpoint)",
    )
    # the range's ends are accepted (by entity_id: a ticker is resolved on end or as_of)
    by_id = {"entity_id": scenarios["plain"]["entity_id"], "limit": 1}
    for good in ("0005-01-01", "9999-11-30"):
        assert get(api, pro_key, "/v1/metrics", start=good, **by_id).status_code == 200
        assert get(api, pro_key, "/v1/metrics", end=good, **by_id).status_code == 200
    assert get(api, pro_key, "/v1/metrics", as_of="0005-01-01", **by_id).json()["data"] == []


def test_value_texts(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    path = f"/v1/metrics/{scenarios['plain']['ticker']}"
    for bad in ("as_reported", "history", "LATEST"):
        assert_bad_request(
            get(api, pro_key, path, view=bad),
            "view must be latest on /v1/metrics; for the metrics as known on an earlier date "
            "pass as_of=YYYY-MM-DD",
        )
    for bad in ("original", "as_reported", "Restated"):
        assert_bad_request(
            get(api, pro_key, path, version=bad),
            "version must be restated on /v1/metrics; for the figures as known before a "
            "restatement pass as_of=YYYY-MM-DD",
        )
    assert_entity_id_rules(api, pro_key, "/v1/metrics", path, scenarios["plain"]["entity_id"])


def test_fields_limit_and_unknown_parameters(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    path = f"/v1/metrics/{scenarios['plain']['ticker']}"
    body = get(api, pro_key, path, fields="pe_ratio,bogus", limit=1, asof="2025-01-01").json()
    assert list(body["data"][0]) == [*IDENTITY, "pe_ratio"]
    assert body["warnings"] == [
        "Unknown parameter ignored: 'asof'. Did you mean 'as_of'?",
        "Unknown field ignored: 'bogus'",
    ]
    assert_bad_request(
        get(api, pro_key, path, fields="bogus"),
        "No valid fields in request. Unknown field ignored: 'bogus'. Available fields: "
        + ", ".join(METRICS),
    )
    assert get(api, pro_key, path, limit="").json()["meta"]["limit"] == 20
    assert get(api, pro_key, path, limit="50.0").json()["meta"]["limit"] == 50
    assert get(api, pro_key, path, limit="101").json()["meta"]["limit"] == 100
    for bad in ("0", "-1", "abc", "5e1"):
        assert_bad_request(get(api, pro_key, path, limit=bad), "limit must be a positive integer")
    bad_cursor = get(api, pro_key, path, cursor="not-a-cursor")
    assert bad_cursor.status_code == 400
    assert bad_cursor.json()["detail"].startswith("Invalid cursor")


def test_walk_in_small_pages_keeps_the_order_without_skips(
    api: RunningApi, redistribution_key: str, scenarios: dict
) -> None:
    classes = scenarios["share_classes"]["class_tickers"]
    tickers = f"{classes[1]},{scenarios['restatement']['ticker']},{classes[0]}"
    path = f"/v1/metrics/{tickers}"
    start = before_as_of(scenarios, 3 * 365)
    whole = _walk(api, redistribution_key, path, limit=100, start=start)
    walked = _walk(api, redistribution_key, path, limit=3, start=start)
    assert walked == whole
    keys = [_order_key(row) for row in walked]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    periods = [(r["entity_id"], r["period_end"], r["period_type"]) for r in walked]
    assert len(periods) == len(set(periods))
    assert len({row["entity_id"] for row in walked}) == 3


def test_shared_ticker_is_ambiguous_on_metrics(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    classes = scenarios["share_classes"]
    shared = classes["shared_ticker"]
    response = get(api, pro_key, f"/v1/metrics/{shared}")
    assert response.status_code == 409, response.text
    body = response.json()
    assert body["code"] == body["error"] == "ambiguous_ticker"
    assert body["hint"] == "pass entity_id="
    today = api.clock.now().date().isoformat()
    assert body["detail"] == (
        f"Ambiguous ticker on {today}: {shared} names more than one entity. Choose one of the "
        "candidates and pass entity_id=<id>."
    )
    candidates = body["candidates"][shared]
    assert [c["entity_id"] for c in candidates] == sorted(classes["security_entity_ids"])
    assert all(set(c) == CANDIDATE_FIELDS for c in candidates)
    assert {c["share_class"] for c in candidates} == {"A", "B"}
    plain = scenarios["plain"]["ticker"]
    mixed = get(api, pro_key, f"/v1/metrics/{shared},{plain}", limit=1)
    assert mixed.status_code == 200
    mixed_body = mixed.json()
    assert mixed_body["warnings"] == [
        f"Ticker {shared} is ambiguous on {today} and was not served; see "
        "meta.tickers_ambiguous and pass entity_id=<id>."
    ]
    assert mixed_body["meta"]["tickers_requested"] == [shared, plain]
    assert list(mixed_body["meta"]["tickers_resolved"]) == [plain]
    assert mixed_body["meta"]["tickers_ambiguous"] == {shared: candidates}
    served = {row["issuer_entity_id"] for row in mixed_body["data"]}
    assert served and classes["issuer_entity_id"] not in served


def test_class_ticker_uses_the_class_price(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    classes = scenarios["share_classes"]
    issuer = classes["issuer_entity_id"]
    window = {"start": before_as_of(scenarios, 3 * 365)}
    company = get(api, pro_key, "/v1/metrics", entity_id=issuer, limit=100, **window).json()
    assert company["meta"]["entity_ids_requested"] == [issuer]
    company_rows = company["data"]
    assert company_rows and {r["entity_id"] for r in company_rows} == {issuer}
    assert without_name(company_rows) == [
        r for r in _expected(_published(api, issuer)) if r["period_end"] >= window["start"]
    ]
    primary = {r["price_entity_id"] for r in company_rows if r["price_close"] is not None}
    assert len(primary) == 1
    compared = 0
    for ticker, security in zip(
        classes["class_tickers"], classes["security_entity_ids"], strict=True
    ):
        body = get(api, pro_key, f"/v1/metrics/{ticker}", limit=100, **window).json()
        assert "warnings" not in body
        assert body["meta"]["tickers_resolved"] == {ticker: security}
        rows = body["data"]
        by_id = get(api, pro_key, "/v1/metrics", entity_id=security, limit=100, **window).json()
        assert by_id["data"] == rows
        assert len(rows) == len(company_rows)
        for row, company_row in zip(rows, company_rows, strict=True):
            assert row["entity_id"] == security and row["issuer_entity_id"] == issuer
            assert row["price_entity_id"] == security
            # everything but the class's price and the ratios on it is the company's
            for name in set(row) - PRICE_FIELDS - {"entity_id"}:
                assert row[name] == company_row[name], name
            close = _class_close(api, security, row["period_end"])
            assert (row["price_date"], row["price_close"]) == close
            if close[1] is None:
                continue
            compared += 1
            eps_ttm, book = row["eps_ttm"], row["book_value_per_share"]
            expected_pe = close[1] / eps_ttm if eps_ttm and eps_ttm > 0 else None
            expected_pb = close[1] / book if book and book > 0 else None
            assert row["pe_ratio"] == pytest.approx(expected_pe)
            assert row["pb_ratio"] == pytest.approx(expected_pb)
            if security in primary:
                assert row["price_close"] == company_row["price_close"]
    assert compared > 0
    prices_differ = get(api, pro_key, f"/v1/metrics/{','.join(classes['class_tickers'])}", **window)
    closes = {}
    for row in prices_differ.json()["data"]:
        closes.setdefault(row["period_end"], set()).add(row["price_close"])
    assert any(len(values) == 2 for values in closes.values()), "the classes trade differently"


def _class_close(
    api: RunningApi, security: int, period_end: str
) -> tuple[str | None, float | None]:
    """The class's last close on or before period_end, within 7 days."""
    end = dt.date.fromisoformat(period_end)
    rows = _query(
        api,
        "SELECT date, close FROM prices WHERE entity_id = $e AND date <= $end "
        "AND date >= $first ORDER BY date DESC LIMIT 1",
        e=security,
        end=end,
        first=end - dt.timedelta(days=7),
    )
    return (rows[0]["date"], rows[0]["close"]) if rows else (None, None)


def test_ambiguous_ticker(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    case = scenarios["ambiguous"]
    response = get(api, pro_key, f"/v1/metrics/{case['ticker']}", end=case["date"])
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == body["error"] == "ambiguous_ticker"
    assert body["status"] == 409
    assert body["hint"] == "pass entity_id="
    assert body["detail"] == (
        f"Ambiguous ticker on {case['date']}: {case['ticker']} names more than one entity. "
        "Choose one of the candidates and pass entity_id=<id>."
    )
    assert list(body["candidates"]) == [case["ticker"]]
    plain = scenarios["plain"]["ticker"]
    mixed = get(api, pro_key, f"/v1/metrics/{case['ticker']},{plain}", end=case["date"], limit=1)
    assert mixed.status_code == 200
    candidates = mixed.json()["meta"]["tickers_ambiguous"][case["ticker"]]
    assert sorted(c["entity_id"] for c in candidates) == sorted(case["entity_ids"])
    assert all(set(c) == CANDIDATE_FIELDS for c in candidates)
    # the fix: a candidate's entity_id
    chosen = get(api, pro_key, "/v1/metrics", entity_id=case["entity_ids"][0], limit=1)
    assert chosen.status_code == 200 and chosen.json()["data"]


def test_ambiguous_409_candidates_are_objects(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    assert_ambiguous_candidates_are_objects(api, pro_key, "/v1/metrics", scenarios["ambiguous"])


def test_free_plan(api: RunningApi, free_key: str, scenarios: dict) -> None:
    assert_free_plan_history_floor(api, free_key, "/v1/metrics", scenarios)
