"""``/v1/fundamentals`` over real HTTP on the published small demo: envelope, every parameter
rule and 400 text, point in time (default, ``as_of``, ``view=as_reported``) checked against the
published rows, the restatement scenario, share classes, issuer ids, ambiguity, paging walked
page by page (with the as_reported page-boundary rule) and the Free plan's rules."""

from __future__ import annotations

import datetime as dt
import itertools
from typing import Any

import pytest

from findata.api.resolution import SHARE_CLASS_WARNING
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
    walk_cursor_pages,
    without_name,
)
from tests.api.server import RunningApi

CONTRACT = load_endpoint_contract("fundamentals")
IDENTITY = CONTRACT.fields.identity
FIGURES = CONTRACT.fields.selectable
RANGE = "from 0002-01-01 to 9999-11-30 on this endpoint"


def _pages(api: RunningApi, key: str, path: str, **params: Any) -> list[list[dict[str, Any]]]:
    """Every page of a query (200 at most), following next_cursor, each at the limit asked."""
    pages = walk_cursor_pages(api, key, path, max_pages=200, **params)
    for body in pages:
        assert body["meta"]["limit"] == params.get("limit", 1000)
    return [body["data"] for body in pages]


def _walk(api: RunningApi, key: str, path: str, **params: Any) -> list[dict[str, Any]]:
    return [row for page in _pages(api, key, path, **params) for row in page]


def _order_key(row: dict[str, Any]) -> tuple[Any, ...]:
    """The spec's order: entity_id, period_end, known_from, period_type (annual first), filing."""
    annual_first = {"annual": 0, "quarterly": 1}[row["period_type"]]
    return row["entity_id"], row["period_end"], row["known_from"], annual_first, row["accession"]


def _published(api: RunningApi, issuer: int) -> list[dict[str, Any]]:
    """The published rows of one issuer, named and typed as the API serves them."""
    sql = "SELECT * FROM fundamentals WHERE issuer_entity_id = $i"
    rows = [json_dates(row) for row in query_published(api, sql, i=issuer)]
    for row in rows:
        row["entity_id"] = row.pop("issuer_entity_id")
    return rows


def _expected(
    rows: list[dict[str, Any]], as_of: str | None = None, as_reported: bool = False
) -> list[dict[str, Any]]:
    """What the contract promises, computed independently: per period the latest filing known
    on the day (by filing date, then accession), or every filing known; a later supersession is
    not shown on as_of."""
    known = [dict(r) for r in rows if as_of is None or r["known_from"] <= as_of]
    if as_of is not None:
        for row in known:
            if row["superseded_on"] is not None and row["superseded_on"] > as_of:
                row["superseded_on"] = None
    if not as_reported:
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        for row in sorted(known, key=lambda r: (r["known_from"], r["accession"])):
            latest[(row["period_end"], row["period_type"])] = row
        known = list(latest.values())
    served = [name for name in (*IDENTITY, *FIGURES) if name != "entity_name"]
    chosen = [{name: row[name] for name in served} for row in known]
    return sorted(chosen, key=_order_key)


def test_envelope_meta_fields_and_headers(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    plain = scenarios["plain"]
    issuer = issuer_of(api, pro_key, plain["ticker"])
    response = get(api, pro_key, f"/v1/fundamentals/{plain['ticker']}", limit=3)
    assert response.status_code == 200, response.text
    assert response.headers["Cache-Control"] == "public, max-age=86400"
    assert "X-Data-Floor" not in response.headers
    body = response.json()
    assert set(body) == {"data", "meta"}
    meta = body["meta"]
    assert meta["tickers_requested"] == [plain["ticker"]]
    assert meta["tickers_resolved"] == {plain["ticker"]: issuer}
    assert (meta["count"], meta["limit"], meta["has_more"]) == (3, 3, True)
    assert isinstance(meta["next_cursor"], str)
    (latest,) = query_published(api, "SELECT MAX(period_end) AS latest FROM fundamentals")
    assert meta["data_through"] == latest["latest"].isoformat()
    row = body["data"][0]
    assert list(row) == [*IDENTITY, *FIGURES]
    assert row["entity_id"] == issuer and row["period_type"] in ("annual", "quarterly")
    assert row["entity_name"] and row["known_from"] >= row["period_end"]


def test_default_answer_is_the_latest_figures_of_each_period(
    api: RunningApi, redistribution_key: str, pro_key: str, scenarios: dict
) -> None:
    ticker = scenarios["restatement"]["ticker"]
    issuer = issuer_of(api, pro_key, ticker)
    rows = _walk(api, redistribution_key, f"/v1/fundamentals/{ticker}", limit=5000)
    assert without_name(rows) == _expected(_published(api, issuer))
    assert all(row["superseded_on"] is None for row in rows)
    # one row per period
    periods = [(row["period_end"], row["period_type"]) for row in rows]
    assert len(periods) == len(set(periods))
    # view=latest names the default; period=all is the same as leaving it out
    for same in ({"view": "latest"}, {"period": "all"}, {"view": ""}):
        assert (
            _walk(api, redistribution_key, f"/v1/fundamentals/{ticker}", limit=5000, **same) == rows
        )


def test_as_of_never_uses_later_knowledge(
    api: RunningApi, redistribution_key: str, pro_key: str, scenarios: dict
) -> None:
    ticker = scenarios["restatement"]["ticker"]
    issuer = issuer_of(api, pro_key, ticker)
    published = _published(api, issuer)
    filing_days = sorted({row["known_from"] for row in published})
    days = set()
    for day in filing_days[:: max(1, len(filing_days) // 8)] + filing_days[-2:]:
        before = (dt.date.fromisoformat(day) - dt.timedelta(days=1)).isoformat()
        days.update({day, before})
    for day in sorted(days):
        for as_reported in (False, True):
            view = {"view": "as_reported"} if as_reported else {}
            # by entity_id: a ticker is resolved on as_of, before its listing it names nothing
            rows = _walk(
                api,
                redistribution_key,
                "/v1/fundamentals",
                entity_id=issuer,
                as_of=day,
                limit=5000,
                **view,
            )
            assert without_name(rows) == _expected(published, day, as_reported), (day, view)
            for row in rows:
                assert row["known_from"] <= day
                assert row["superseded_on"] is None or row["superseded_on"] <= day


def test_the_restatement_scenario(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    case = scenarios["restatement"]
    path = f"/v1/fundamentals/{case['ticker']}"
    window = {"start": case["period_end"], "end": case["period_end"]}
    first = dt.date.fromisoformat(case["first_known"])
    restated = dt.date.fromisoformat(case["restated_known"])

    def answer(**params: Any) -> list[dict[str, Any]]:
        response = get(api, pro_key, path, **window, **params)
        assert response.status_code == 200, response.text
        return response.json()["data"]

    assert answer(as_of=(first - dt.timedelta(days=1)).isoformat()) == []
    original = answer(as_of=first.isoformat())
    assert [r["known_from"] for r in original] == [case["first_known"]]
    assert original[0]["superseded_on"] is None  # the restatement was not known yet
    still_original = answer(as_of=(restated - dt.timedelta(days=1)).isoformat())
    assert still_original == original
    after = answer(as_of=restated.isoformat())
    assert [r["known_from"] for r in after] == [case["restated_known"]]
    assert after[0]["is_restatement"] is True
    changed = [name for name in FIGURES if after[0][name] != original[0][name]]
    assert changed, "a restatement changes at least one figure"

    every_filing = answer(view="as_reported")
    assert [r["known_from"] for r in every_filing][:2] == [
        case["first_known"],
        case["restated_known"],
    ]
    assert every_filing[0]["superseded_on"] == case["restated_known"]
    assert every_filing[0]["accession"] == original[0]["accession"]
    assert every_filing[1]["accession"] == after[0]["accession"]
    assert [r["known_from"] for r in every_filing] == sorted(r["known_from"] for r in every_filing)
    known_then = answer(view="as_reported", as_of=(restated - dt.timedelta(days=1)).isoformat())
    assert known_then == original
    # the default is the period's current row: the last filing that reported it
    latest = answer()
    assert latest == [every_filing[-1]] and latest[0]["superseded_on"] is None


def test_period_selects_the_period_type(
    api: RunningApi, redistribution_key: str, scenarios: dict
) -> None:
    path = f"/v1/fundamentals/{scenarios['plain']['ticker']}"
    both = _walk(api, redistribution_key, path, limit=5000)
    annual = _walk(api, redistribution_key, path, period="annual", limit=5000)
    quarterly = _walk(api, redistribution_key, path, period="quarterly", limit=5000)
    assert annual and quarterly
    assert {r["period_type"] for r in annual} == {"annual"}
    assert {r["period_type"] for r in quarterly} == {"quarterly"}
    assert sorted(annual + quarterly, key=_order_key) == both


def test_start_and_end_select_period_end(
    api: RunningApi, redistribution_key: str, scenarios: dict
) -> None:
    path = f"/v1/fundamentals/{scenarios['plain']['ticker']}"
    both = _walk(api, redistribution_key, path, limit=5000)
    start, end = both[2]["period_end"], both[-3]["period_end"]
    inside = _walk(api, redistribution_key, path, start=start, end=end, limit=5000)
    assert inside == [r for r in both if start <= r["period_end"] <= end]
    assert get(api, redistribution_key, path, start="9999-11-30").json()["data"] == []


def test_date_texts(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    path = f"/v1/fundamentals/{scenarios['plain']['ticker']}"
    for bad in ("2025-1-01", "2025-02-30", "20250101", "x"):
        assert_bad_request(
            get(api, pro_key, path, start=bad), "Invalid start date format (YYYY-MM-DD)"
        )
    for bad in ("0001-12-31", "9999-12-01"):
        assert_bad_request(
            get(api, pro_key, path, start=bad),
            f"Invalid start date: '{bad}' (expected a date {RANGE})",
        )
    for bad in ("0001-12-31", "9999-12-01", "2025-13-01", "x"):
        assert_bad_request(
            get(api, pro_key, path, end=bad), f"Invalid end date: '{bad}' (expected a date {RANGE})"
        )
    # the range's ends are accepted (by entity_id: a ticker is resolved on end or as_of)
    by_id = {"entity_id": scenarios["plain"]["entity_id"], "limit": 1}
    for good in ("0002-01-01", "9999-11-30"):
        assert get(api, pro_key, "/v1/fundamentals", start=good, **by_id).status_code == 200
        assert get(api, pro_key, "/v1/fundamentals", end=good, **by_id).status_code == 200
    assert_bad_request(
        get(api, pro_key, path, start="2025-03-10", end="2025-03-09"),
        "end (2025-03-09) is before start (2025-03-10)",
    )
    for bad in ("2025-02-30", "2025-1-1", "yesterday"):
        assert_bad_request(
            get(api, pro_key, path, as_of=bad),
            f"Invalid as_of date: '{bad}' (expected a real YYYY-MM-DD date)",
        )
    assert get(api, pro_key, "/v1/fundamentals", as_of="0001-01-01", **by_id).json()["data"] == []


def test_value_texts(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    path = f"/v1/fundamentals/{scenarios['plain']['ticker']}"
    for bad in ("yearly", "Annual", "q"):
        assert_bad_request(
            get(api, pro_key, path, period=bad), "period must be quarterly, annual, or all"
        )
    for bad in ("history", "AS_REPORTED", "original"):
        assert_bad_request(
            get(api, pro_key, path, view=bad),
            "view must be latest or as_reported on /v1/fundamentals",
        )
    assert_entity_id_rules(api, pro_key, "/v1/fundamentals", path, scenarios["plain"]["entity_id"])


def test_fields_and_unknown_parameters(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    path = f"/v1/fundamentals/{scenarios['plain']['ticker']}"
    body = get(api, pro_key, path, fields="revenue,bogus", limit=1, **{"from": "2024-01-01"}).json()
    assert list(body["data"][0]) == [*IDENTITY, "revenue"]
    assert body["warnings"] == [
        "Unknown parameter ignored: 'from'. Did you mean 'start'?",
        "Unknown field ignored: 'bogus'",
    ]
    assert_bad_request(
        get(api, pro_key, path, fields="bogus"),
        "No valid fields in request. Unknown field ignored: 'bogus'. Available fields: "
        + ", ".join(FIGURES),
    )


def test_limit_rules(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    path = f"/v1/fundamentals/{scenarios['plain']['ticker']}"
    assert get(api, pro_key, path).json()["meta"]["limit"] == 1000
    assert get(api, pro_key, path, limit="").json()["meta"]["limit"] == 1000
    assert get(api, pro_key, path, limit="50.0").json()["meta"]["limit"] == 50
    assert get(api, pro_key, path, limit="999999").json()["meta"]["limit"] == 5000
    for bad in ("0", "-1", "abc", "5e1", "50.5"):
        assert_bad_request(get(api, pro_key, path, limit=bad), "limit must be a positive integer")
    bad_cursor = get(api, pro_key, path, cursor="not-a-cursor")
    assert bad_cursor.status_code == 400
    assert bad_cursor.json()["detail"].startswith("Invalid cursor")


def test_walk_in_small_pages_keeps_the_order_without_skips(
    api: RunningApi, redistribution_key: str, scenarios: dict
) -> None:
    tickers = f"{scenarios['restatement']['ticker']},{scenarios['plain']['ticker']}"
    path = f"/v1/fundamentals/{tickers}"
    params = {"start": before_as_of(scenarios, 3 * 365)}
    whole = _walk(api, redistribution_key, path, limit=5000, **params)
    walked = _walk(api, redistribution_key, path, limit=4, **params)
    assert walked == whole
    keys = [_order_key(row) for row in walked]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert len({row["entity_id"] for row in walked}) == 2
    # the cursor is bound to the request; only limit may change
    first = get(api, redistribution_key, path, limit=4, **params).json()
    cursor = first["meta"]["next_cursor"]
    assert (
        get(api, redistribution_key, path, limit=6, cursor=cursor, **params).json()["data"][:4]
        == (walked[4:8])
    )
    other = get(
        api, redistribution_key, path, limit=4, cursor=cursor, start=before_as_of(scenarios, 1)
    )
    assert other.status_code == 400 and "different request" in other.json()["detail"]


@pytest.mark.parametrize("limit", [1, 2, 3, 4])
def test_as_reported_pages_end_at_a_period_boundary(
    api: RunningApi, redistribution_key: str, scenarios: dict, limit: int
) -> None:
    case = scenarios["restatement"]
    path = f"/v1/fundamentals/{case['ticker']}"
    # the restated year and the next, which the next 10-K repeats as comparatives
    year = int(case["period_end"][:4])
    params = {"view": "as_reported", "start": f"{year}-01-01", "end": f"{year + 1}-12-31"}
    whole = _walk(api, redistribution_key, path, limit=5000, **params)
    pages = _pages(api, redistribution_key, path, limit=limit, **params)

    def period(row: dict[str, Any]) -> tuple[int, str]:
        return row["entity_id"], row["period_end"]

    flat = [row for page in pages for row in page]
    assert flat == whole
    assert [_order_key(r) for r in flat] == sorted(_order_key(r) for r in flat)
    filings = {}
    for row in whole:
        filings[period(row)] = filings.get(period(row), 0) + 1
    assert max(filings.values()) >= 3, "the demo has a period reported by three filings"
    for page, following in itertools.pairwise(pages):
        assert page, "no empty page before the last"
        if period(page[-1]) == period(following[0]):
            # the page ends inside a period only when that period fills the page alone
            assert {period(row) for row in page} == {period(page[-1])}
            assert len(page) == limit
        elif len(page) < limit:
            # a shortened page: the next period would not have fit
            assert filings[period(following[0])] > limit - len(page)
    # the restated period, walked with limit 2, is split because alone it exceeds the page
    if limit == 2:
        (issuer,) = {row["entity_id"] for row in flat}
        restated = (issuer, case["period_end"])
        holding = [i for i, page in enumerate(pages) if any(period(r) == restated for r in page)]
        assert filings[restated] > 2 and len(holding) >= 2


def test_share_classes(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    classes = scenarios["share_classes"]
    issuer = classes["issuer_entity_id"]
    window = {"start": before_as_of(scenarios, 2 * 365)}
    shared = get(api, pro_key, f"/v1/fundamentals/{classes['shared_ticker']}", **window)
    assert shared.status_code == 200, shared.text
    body = shared.json()
    name = body["data"][0]["entity_name"]
    assert body["warnings"] == [
        SHARE_CLASS_WARNING.format(
            ticker=classes["shared_ticker"],
            name=name,
            issuer=issuer,
            classes=", ".join(classes["class_tickers"]),
        )
    ]
    assert body["meta"]["tickers_resolved"] == {classes["shared_ticker"]: issuer}
    assert body["data"] and {row["entity_id"] for row in body["data"]} == {issuer}
    # a class ticker, the issuer id and a class security id all give the company's statements
    for ticker in classes["class_tickers"]:
        by_class = get(api, pro_key, f"/v1/fundamentals/{ticker}", **window).json()
        assert "warnings" not in by_class
        assert by_class["data"] == body["data"]
        assert by_class["meta"]["tickers_resolved"] == {ticker: issuer}
    for entity_id in (issuer, *classes["security_entity_ids"]):
        by_id = get(api, pro_key, "/v1/fundamentals", entity_id=entity_id, **window).json()
        assert by_id["data"] == body["data"]
        assert by_id["meta"]["entity_ids_requested"] == [entity_id]


def test_issuer_without_listing_is_served_by_its_entity_id(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    case = scenarios["issuer_without_listing"]
    by_ticker = get(api, pro_key, f"/v1/fundamentals/{case['ticker']}", end=case["date"])
    assert by_ticker.status_code == 404
    body = get(api, pro_key, "/v1/fundamentals", entity_id=case["issuer_entity_id"]).json()
    assert body["data"]
    assert {row["entity_id"] for row in body["data"]} == {case["issuer_entity_id"]}
    missing = get(api, pro_key, "/v1/fundamentals/ZZZZQ")
    assert missing.status_code == 404
    assert missing.json()["detail"] == "No matching entities for: ZZZZQ"


def test_ambiguous_ticker(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    case = scenarios["ambiguous"]
    response = get(api, pro_key, f"/v1/fundamentals/{case['ticker']}", end=case["date"])
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
    assert len(body["candidates"][case["ticker"]]) == 2
    # beside a ticker that resolved: 200, a warning and the candidates in meta (spec objects)
    mixed = get(
        api, pro_key, f"/v1/fundamentals/{case['ticker']},{scenarios['plain']['ticker']}",
        end=case["date"], limit=1,
    )  # fmt: skip
    assert mixed.status_code == 200
    meta = mixed.json()["meta"]
    assert meta["tickers_requested"] == [case["ticker"], scenarios["plain"]["ticker"]]
    candidates = meta["tickers_ambiguous"][case["ticker"]]
    assert sorted(c["entity_id"] for c in candidates) == sorted(case["entity_ids"])
    assert set(candidates[0]) == {
        "entity_id", "name", "exchange", "share_class", "last_bar_date", "valid_from", "valid_to",
    }  # fmt: skip
    assert mixed.json()["warnings"] == [
        f"Ticker {case['ticker']} is ambiguous on {case['date']} and was not served; see "
        "meta.tickers_ambiguous and pass entity_id=<id>."
    ]
    # the fix: one candidate's entity_id selects its company
    chosen = get(api, pro_key, "/v1/fundamentals", entity_id=case["entity_ids"][0], limit=1)
    assert chosen.status_code == 200 and chosen.json()["data"]


def test_ambiguous_409_candidates_are_objects(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    assert_ambiguous_candidates_are_objects(
        api, pro_key, "/v1/fundamentals", scenarios["ambiguous"]
    )


def test_free_plan(api: RunningApi, free_key: str, scenarios: dict) -> None:
    floor, body = assert_free_plan_history_floor(api, free_key, "/v1/fundamentals", scenarios)
    plain = scenarios["plain"]["ticker"]
    inside = get(api, free_key, f"/v1/fundamentals/{plain}", start=floor.isoformat())
    assert "warnings" not in inside.json()
    assert inside.json()["data"] == body["data"]
