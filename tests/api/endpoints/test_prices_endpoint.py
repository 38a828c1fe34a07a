"""``/v1/prices`` over real HTTP on the published small demo: envelope, every parameter rule and
400 text, paging (walked page by page), plan rules, and the demo's scenarios."""

from __future__ import annotations

import datetime as dt

import orjson
import pytest

from findata.api.paging import CursorState, request_fingerprint
from tests.api.endpoints.api_calls import (
    assert_bad_request,
    assert_entity_id_rules,
    before_as_of,
    free_floor,
    get,
    walk_cursor_rows,
)
from tests.api.server import RunningApi


def test_envelope_meta_and_headers(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    plain = scenarios["plain"]
    start = before_as_of(scenarios, 60)
    response = get(api, pro_key, f"/v1/prices/{plain['ticker']}", start=start, limit=5)
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "public, max-age=86400"
    assert "X-Data-Floor" not in response.headers
    body = response.json()
    assert set(body) == {"data", "meta"}
    meta = body["meta"]
    assert meta["tickers_requested"] == [plain["ticker"]]
    assert meta["tickers_resolved"] == {plain["ticker"]: plain["entity_id"]}
    assert meta["data_through"] == scenarios["as_of"]
    assert (meta["count"], meta["limit"], meta["has_more"]) == (5, 5, True)
    assert isinstance(meta["next_cursor"], str)
    row = body["data"][0]
    assert list(row)[:6] == [
        "entity_id",
        "ticker",
        "entity_name",
        "gics_sector",
        "date",
        "price_basis",
    ]
    assert row["price_basis"] == "trade" and row["entity_id"] == plain["entity_id"]
    assert set(row) >= {"open", "high", "low", "close", "adj_close", "volume", "market_cap"}


def test_whole_result_walked_in_small_pages_is_sorted_without_skips(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    tickers = f"{scenarios['plain']['ticker']},{scenarios['share_classes']['class_tickers'][1]}"
    params = {"start": before_as_of(scenarios, 150), "end": before_as_of(scenarios, 60)}
    walked = walk_cursor_rows(api, pro_key, f"/v1/prices/{tickers}", limit=7, **params)
    whole = get(api, pro_key, f"/v1/prices/{tickers}", limit=5000, **params).json()["data"]
    keys = [(row["entity_id"], row["date"]) for row in walked]
    assert walked == whole
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert len({row["entity_id"] for row in walked}) == 2


def test_limit_rules(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    path = f"/v1/prices/{scenarios['plain']['ticker']}"
    assert get(api, pro_key, path, limit="50.0").json()["meta"]["limit"] == 50
    assert get(api, pro_key, path, limit="999999").json()["meta"]["limit"] == 5000
    assert get(api, pro_key, path, limit="").json()["meta"]["limit"] == 1000
    for bad in ("0", "-1", "abc", "5e1", "50.5", "1000000000"):
        assert_bad_request(get(api, pro_key, path, limit=bad), "limit must be a positive integer")


def test_date_and_value_texts(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    path = f"/v1/prices/{scenarios['plain']['ticker']}"
    assert_bad_request(
        get(api, pro_key, path, start="2026-1-01"), "Invalid start date format (YYYY-MM-DD)"
    )
    assert_bad_request(
        get(api, pro_key, path, start="2026-02-30"), "Invalid start date format (YYYY-MM-DD)"
    )
    assert_bad_request(
        get(api, pro_key, path, end="2026-13-01"),
        "Invalid end date: '2026-13-01' (expected a date from 0001-01-01 to 9999-12-31 on this "
        "endpoint)",
    )
    assert_bad_request(
        get(api, pro_key, path, start="2026-03-10", end="2026-03-09"),
        "end (2026-03-09) is before start (2026-03-10)",
    )
    assert_bad_request(
        get(api, pro_key, path, interval="2d"),
        "Invalid interval: '2d'. Valid: 1d, 3d, 1w, 1mo, 3mo, 6mo, 1y",
    )
    assert_bad_request(
        get(api, pro_key, path, adjust="dividends"), "adjust must be 'split' or 'none'"
    )
    assert_entity_id_rules(api, pro_key, "/v1/prices", path, scenarios["plain"]["entity_id"])


def test_fields(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    path = f"/v1/prices/{scenarios['plain']['ticker']}"
    only_close = get(api, pro_key, path, fields="close", limit=1).json()
    assert list(only_close["data"][0]) == [
        "entity_id", "ticker", "entity_name", "gics_sector", "date", "price_basis", "close",
    ]  # fmt: skip
    mixed = get(api, pro_key, path, fields="close,bogus", limit=1).json()
    assert mixed["warnings"] == ["Unknown field ignored: 'bogus'"]
    assert_bad_request(
        get(api, pro_key, path, fields="bogus"),
        "No valid fields in request. Unknown field ignored: 'bogus'. Available fields: open, "
        "high, low, close, adj_close, volume, shares_outstanding, return_daily, exchange_code, "
        "split_ratio, dividend, market_cap",
    )


def test_unknown_parameters_are_named_with_suggestions(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    path = f"/v1/prices/{scenarios['plain']['ticker']}"
    body = get(
        api,
        pro_key,
        path,
        limit=1,
        **{"from": "2026-01-01", "symbol": "X", "page_size": 5, "zz": 1},
    ).json()
    assert body["warnings"] == [
        "Unknown parameter ignored: 'from'. Did you mean 'start'?",
        "Unknown parameter ignored: 'symbol'. Did you mean a ticker in the path?",
        "Unknown parameter ignored: 'page_size'. Did you mean 'limit'?",
        "Unknown parameter ignored: 'zz'",
    ]


def test_ticker_counts_per_plan(
    api: RunningApi, pro_key: str, free_key: str, scenarios: dict
) -> None:
    two = f"{scenarios['plain']['ticker']},{scenarios['delisted']['ticker']}"
    assert_bad_request(
        get(api, free_key, f"/v1/prices/{two}"),
        "Free tier allows 1 ticker per request. Upgrade to Pro for up to 100 tickers per request.",
    )
    assert_bad_request(
        get(api, free_key, "/v1/prices", entity_id="2000001,2000002"),
        "Free tier allows 1 entity_id per request. Upgrade to Pro for up to 100 entity_id values "
        "per request.",
    )
    many = ",".join(f"T{i}" for i in range(101))
    assert_bad_request(get(api, pro_key, f"/v1/prices/{many}"), "Maximum 100 tickers per request")


def test_free_history_floor(api: RunningApi, free_key: str, scenarios: dict) -> None:
    floor = free_floor(api.clock.now().date())
    path = f"/v1/prices/{scenarios['plain']['ticker']}"
    response = get(api, free_key, path, start=(floor - dt.timedelta(days=30)).isoformat(), limit=3)
    assert response.headers["X-Data-Floor"] == floor.isoformat()
    body = response.json()
    assert min(row["date"] for row in body["data"]) >= floor.isoformat()
    assert body["warnings"] == [
        f"Free plan history starts at {floor.isoformat()} (one year before today, UTC); rows "
        "before it are not returned. Upgrade to Pro for full history."
    ]
    long_before, end_before = (floor - dt.timedelta(days=d) for d in (730, 365))
    before = get(
        api, free_key, path, start=long_before.isoformat(), end=end_before.isoformat()
    ).json()
    assert before["data"] == []
    assert "the requested window ends before it, so there are no rows" in before["warnings"][0]


def test_ambiguous_ticker(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    ambiguous = scenarios["ambiguous"]
    response = get(api, pro_key, f"/v1/prices/{ambiguous['ticker']}", end=ambiguous["date"])
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == body["error"] == "ambiguous_ticker"
    assert body["hint"] == "pass entity_id="
    candidates = body["candidates"][ambiguous["ticker"]]
    assert sorted(c["entity_id"] for c in candidates) == sorted(ambiguous["entity_ids"])
    assert set(candidates[0]) == {
        "entity_id", "name", "exchange", "share_class", "last_bar_date", "valid_from", "valid_to",
    }  # fmt: skip
    mixed = get(
        api, pro_key, f"/v1/prices/{ambiguous['ticker']},{scenarios['plain']['ticker']}",
        end=ambiguous["date"], limit=1,
    )  # fmt: skip
    assert mixed.status_code == 200
    assert list(mixed.json()["meta"]["tickers_ambiguous"]) == [ambiguous["ticker"]]
    assert any(ambiguous["ticker"] in warning for warning in mixed.json()["warnings"])


def test_absent_and_unlisted(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    missing = get(api, pro_key, "/v1/prices/ZZZZQ")
    assert missing.status_code == 404
    assert missing.json()["detail"] == "No matching entities for: ZZZZQ"
    unlisted = scenarios["issuer_without_listing"]
    response = get(api, pro_key, f"/v1/prices/{unlisted['ticker']}", end=unlisted["date"])
    assert response.status_code == 404
    assert response.json()["detail"] == (
        f"No listed security on {unlisted['date']} for: {unlisted['ticker']}"
    )
    by_issuer_id = get(api, pro_key, "/v1/prices", entity_id=unlisted["issuer_entity_id"])
    assert by_issuer_id.status_code == 404
    assert by_issuer_id.json()["detail"].startswith("No listed security on ")


def test_reused_renamed_and_delisted_tickers(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    for period in scenarios["reused"]["periods"]:
        end = period["valid_to"] or scenarios["as_of"]
        body = get(
            api, pro_key, f"/v1/prices/{scenarios['reused']['ticker']}", end=end, limit=1
        ).json()
        assert body["meta"]["tickers_resolved"] == {
            scenarios["reused"]["ticker"]: period["entity_id"]
        }
    renamed = scenarios["renamed"]
    change = dt.date.fromisoformat(renamed["change_date"])
    old = get(
        api,
        pro_key,
        f"/v1/prices/{renamed['old_ticker']}",
        end=(change - dt.timedelta(days=1)).isoformat(),
        limit=1,
    )
    new = get(api, pro_key, f"/v1/prices/{renamed['new_ticker']}", limit=1)
    assert old.json()["meta"]["tickers_resolved"] == {renamed["old_ticker"]: renamed["entity_id"]}
    assert new.json()["meta"]["tickers_resolved"] == {renamed["new_ticker"]: renamed["entity_id"]}
    delisted = scenarios["delisted"]
    rows = walk_cursor_rows(
        api,
        pro_key,
        f"/v1/prices/{delisted['ticker']}",
        start=(dt.date.fromisoformat(delisted["last_date"]) - dt.timedelta(days=90)).isoformat(),
        limit=5000,
    )
    assert rows and rows[-1]["date"] == delisted["last_date"]
    assert {row["entity_id"] for row in rows} == {delisted["entity_id"]}


def test_split_adjustment_and_dividend(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    split = scenarios["split"]
    day = dt.date.fromisoformat(split["date"])
    window = {
        "start": (day - dt.timedelta(days=7)).isoformat(),
        "end": (day + dt.timedelta(days=7)).isoformat(),
    }
    path = f"/v1/prices/{split['ticker']}"
    raw = get(api, pro_key, path, **window, adjust="none").json()["data"]
    adjusted = get(api, pro_key, path, **window, adjust="split").json()["data"]
    assert [r["date"] for r in raw] == [r["date"] for r in adjusted]
    for before, restated in zip(raw, adjusted, strict=True):
        factor = split["ratio"] if before["date"] < split["date"] else 1.0
        assert restated["close"] == pytest.approx(before["close"] / factor)
        assert restated["open"] == pytest.approx(before["open"] / factor)
        assert restated["volume"] == round(before["volume"] * factor)
        assert restated["adj_close"] == before["adj_close"]
    on_split = next(r for r in raw if r["date"] == split["date"])
    assert on_split["split_ratio"] == split["ratio"]
    dividend = scenarios["dividend"]
    rows = get(
        api,
        pro_key,
        f"/v1/prices/{dividend['ticker']}",
        start=dividend["date"],
        end=dividend["date"],
    ).json()["data"]
    assert rows[0]["dividend"] == pytest.approx(dividend["amount"])


def test_monthly_interval_aggregates_the_daily_rows(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    path = f"/v1/prices/{scenarios['plain']['ticker']}"
    # the three whole calendar months before the month of as_of
    month_of_as_of = dt.date.fromisoformat(scenarios["as_of"]).replace(day=1)
    end = month_of_as_of - dt.timedelta(days=1)
    start = (end.replace(day=1) - dt.timedelta(days=40)).replace(day=1)
    window = {"start": start.isoformat(), "end": end.isoformat()}
    daily = get(api, pro_key, path, **window).json()["data"]
    monthly = get(api, pro_key, path, **window, interval="1mo").json()["data"]
    assert len(monthly) == 3
    for month in monthly:
        days = [r for r in daily if r["date"][:7] == month["date"][:7]]
        assert month["date"] == days[-1]["date"]
        assert month["open"] == days[0]["open"] and month["close"] == days[-1]["close"]
        assert month["high"] == max(r["high"] for r in days)
        assert month["low"] == min(r["low"] for r in days)
        assert month["volume"] == sum(r["volume"] for r in days)
    three_day = get(api, pro_key, path, **window, interval="3d").json()["data"]
    assert len(three_day) == -(-len(daily) // 3)


def test_cursor_rules(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    path = f"/v1/prices/{scenarios['plain']['ticker']}"
    start, next_day = before_as_of(scenarios, 60), before_as_of(scenarios, 59)
    first = get(api, pro_key, path, start=start, limit=2).json()
    cursor = first["meta"]["next_cursor"]
    # limit may change; nothing else may
    assert get(api, pro_key, path, start=start, limit=3, cursor=cursor).status_code == 200
    other = get(api, pro_key, path, start=next_day, limit=2, cursor=cursor)
    assert other.status_code == 400
    assert other.json()["detail"].startswith("Invalid cursor")
    assert "different request" in other.json()["detail"]
    altered = cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB")
    for bad in (altered, "not-a-cursor", "abc.def"):
        response = get(api, pro_key, path, start=start, cursor=bad)
        assert response.status_code == 400 and response.json()["detail"].startswith(
            "Invalid cursor"
        )
    # an empty cursor asks for the first page
    assert get(api, pro_key, path, start=start, limit=2, cursor="").json() == first


def test_a_cursor_of_an_earlier_paging_scheme(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    path = f"/v1/prices/{scenarios['plain']['ticker']}"
    codec = api.app.state.cursors
    payload = orjson.dumps(
        {"s": 1, "r": request_fingerprint(path, {"start": "2026-01-01"}), "o": 2, "p": 2}
    )
    import base64

    old = (
        base64.urlsafe_b64encode(payload).rstrip(b"=").decode()
        + "."
        + base64.urlsafe_b64encode(codec._mac(payload)).rstrip(b"=").decode()
    )
    response = get(api, pro_key, path, start="2026-01-01", cursor=old)
    assert response.status_code == 400
    assert response.json()["detail"] == (
        "Invalid cursor: it comes from an earlier paging scheme. Start again from the first page."
    )
    assert CursorState  # the state type a current cursor carries


def test_free_page_limit(api: RunningApi, free_key: str, scenarios: dict) -> None:
    path = f"/v1/prices/{scenarios['plain']['ticker']}"
    cursor = None
    for _ in range(10):  # the first page counts: 10 pages on Free
        response = get(api, free_key, path, limit=1, **({"cursor": cursor} if cursor else {}))
        assert response.status_code == 200
        cursor = response.json()["meta"]["next_cursor"]
    refused = get(api, free_key, path, limit=1, cursor=cursor)
    assert refused.status_code == 400
    body = refused.json()
    assert body["code"] == "pagination_limit_reached"
    assert body["error"] == "Pagination limit reached"
    assert body["message"] == body["detail"]


def test_a_known_ticker_with_no_rows_in_the_window(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    plain = scenarios["plain"]
    body = get(api, pro_key, f"/v1/prices/{plain['ticker']}", start="1999-01-01", end="1999-12-31")
    assert body.status_code == 200
    assert body.json()["data"] == []
    assert body.json()["meta"]["tickers_resolved"] == {plain["ticker"]: plain["entity_id"]}
