"""Quotas over real HTTP with the injectable clock (spec "Limits", the 429 rows of "Errors",
"Keyless access", "Response headers"): hourly and daily requests, rows, keyless per-IP limits,
blocked addresses, Free's index as_of allowance and slow-downs, per-ticker and whole-or-nothing
counting, and which statuses carry which headers."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from findata.accounts.ips import block_ip, unblock_ip
from findata.api.app import create_app
from findata.clock import ManualClock
from findata.settings import Settings
from tests.api.endpoints.api_calls import before_as_of
from tests.api.server import RunningApi, serve

#: 10:15 UTC on the served day: 45 minutes to the next hour, 13 h 45 min to midnight
START_OF_TEST = dt.time(10, 15)
RATE_HEADERS = ("X-RateLimit-Limit-Day", "X-RateLimit-Remaining-Day")
HOURLY_HEADERS = ("X-RateLimit-Limit-Hour", "X-RateLimit-Remaining-Hour")


class Sleeps(list[float]):
    """A ``sleep`` that records instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture(scope="module")
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture(scope="module")
def quota_api(published_home: Path, sleeps: Sleeps) -> Iterator[RunningApi]:
    """A server of its own on the published demo, its clock at 10:15 UTC today."""
    today = dt.datetime.now(dt.UTC).date()
    clock = ManualClock(dt.datetime.combine(today, START_OF_TEST, tzinfo=dt.UTC))
    with serve(create_app(Settings(home=published_home), clock, sleep=sleeps), clock) as running:
        yield running


@pytest.fixture
def at_ten_fifteen(quota_api: RunningApi) -> Iterator[RunningApi]:
    """Each test starts at 10:15 UTC today, and leaves the clock there."""
    today = dt.datetime.now(dt.UTC).date()
    start = dt.datetime.combine(today, START_OF_TEST, tzinfo=dt.UTC)
    quota_api.clock.set(start)
    yield quota_api
    quota_api.clock.set(start)


def _get(api: RunningApi, key: str | None, path: str, **params: Any) -> httpx.Response:
    with api.client() as client:
        return client.get(path, params=params, headers={"X-API-Key": key} if key else {})


def _usage(api: RunningApi, key: str) -> dict[str, Any]:
    return _get(api, key, "/v1/auth/usage").json()


def _no_quota_headers(response: httpx.Response) -> None:
    for name in (*RATE_HEADERS, *HOURLY_HEADERS, "X-Rows-Today", "X-Entities-Today"):
        assert name not in response.headers, (response.status_code, name)
    assert "Retry-After" not in response.headers


def test_free_hourly_burst_and_its_reset(at_ten_fifteen: RunningApi, scenarios: dict) -> None:
    api = at_ten_fifteen
    key = api.new_key("free").key
    path = f"/v1/prices/{scenarios['plain']['ticker']}"
    for used in range(1, 41):
        response = _get(api, key, path, limit=1)
        assert response.status_code == 200
        assert response.headers["X-RateLimit-Remaining-Hour"] == str(40 - used)
        assert response.headers["X-RateLimit-Remaining-Day"] == str(100 - used)
        assert response.headers["X-RateLimit-Limit-Hour"] == "40"
    refused = _get(api, key, path, limit=1)
    assert refused.status_code == 429
    assert refused.json() == {
        "error": "Burst limit reached (40 requests/hour). Try again shortly.",
        "code": "burst_limit_reached",
        "status": 429,
        "detail": "Burst limit reached (40 requests/hour). Try again shortly.",
        "message": "Burst limit reached (40 requests/hour). Try again shortly.",
        "retry_after_seconds": 45 * 60,
    }
    _no_quota_headers(refused)
    assert _usage(api, key)["requests_today"] == 40  # the refusal used nothing

    api.clock.advance(dt.timedelta(minutes=45))  # 11:00: a new clock hour
    again = _get(api, key, path, limit=1)
    assert again.status_code == 200
    assert again.headers["X-RateLimit-Remaining-Hour"] == "39"
    assert again.headers["X-RateLimit-Remaining-Day"] == "59"


def test_free_daily_limit_and_midnight(at_ten_fifteen: RunningApi, scenarios: dict) -> None:
    api = at_ten_fifteen
    key = api.new_key("free")
    path = f"/v1/prices/{scenarios['plain']['ticker']}"
    # 99 requests used earlier today
    api.counters.add_usage(key.account.id, api.clock.now() - dt.timedelta(hours=2), requests=99)
    assert _get(api, key.key, path, limit=1).headers["X-RateLimit-Remaining-Day"] == "0"
    refused = _get(api, key.key, path, limit=1)
    assert refused.status_code == 429
    body = refused.json()
    assert body["code"] == "daily_limit_reached"
    assert body["error"] == "Daily limit reached (100 requests/day). Resets at midnight UTC."
    assert body["message"] == body["detail"]
    assert body["retry_after_seconds"] == 13 * 3600 + 45 * 60
    _no_quota_headers(refused)
    api.clock.advance(dt.timedelta(hours=13, minutes=45))  # 00:00 UTC
    assert _get(api, key.key, path, limit=1).headers["X-RateLimit-Remaining-Day"] == "99"


def test_each_ticker_and_page_counts_and_refusals_count_nothing(
    at_ten_fifteen: RunningApi, scenarios: dict
) -> None:
    api = at_ten_fifteen
    key = api.new_key("pro").key
    three = ",".join([scenarios["plain"]["ticker"], *scenarios["share_classes"]["class_tickers"]])
    first = _get(api, key, f"/v1/prices/{three}", limit=2)
    assert _usage(api, key)["requests_today"] == 3
    _get(api, key, f"/v1/prices/{three}", limit=2, cursor=first.json()["meta"]["next_cursor"])
    assert _usage(api, key)["requests_today"] == 6  # a page counts as a request of its own
    missing = _get(api, key, "/v1/prices/ZZZQA,ZZZQB")
    assert missing.status_code == 404 and missing.headers["X-RateLimit-Remaining-Day"] == "9992"
    assert "X-Rows-Today" not in missing.headers
    ambiguous = scenarios["ambiguous"]
    conflict = _get(api, key, f"/v1/prices/{ambiguous['ticker']}", end=ambiguous["date"])
    assert conflict.status_code == 409 and "X-RateLimit-Limit-Day" in conflict.headers
    assert _usage(api, key)["requests_today"] == 9
    refusals = [
        _get(api, key, f"/v1/prices/{three}", start="2026-02-30"),  # 400
        _get(api, key, "/v1/index/nasdaq"),  # 400 from the handler, after admission
        _get(api, key, "/v1/changes-not-here"),  # unknown endpoint
        _get(api, "fdk_" + "0" * 32, f"/v1/prices/{three}"),  # 401
        _get(api, api.new_key("free").key, f"/v1/insiders/{scenarios['insiders']['ticker']}"),
    ]
    assert [r.status_code for r in refusals] == [400, 400, 404, 401, 402]
    for response in refusals:
        _no_quota_headers(response)
    assert _usage(api, key)["requests_today"] == 9
    assert _usage(api, key)["requests_today"] == 9  # /v1/auth/usage itself counts nothing


def test_whole_or_nothing(at_ten_fifteen: RunningApi, scenarios: dict) -> None:
    api = at_ten_fifteen
    key = api.new_key("pro")
    api.counters.add_usage(key.account.id, api.clock.now(), requests=9_998)
    three = ",".join([scenarios["plain"]["ticker"], *scenarios["share_classes"]["class_tickers"]])
    refused = _get(api, key.key, f"/v1/prices/{three}", limit=1)
    assert refused.status_code == 429 and refused.json()["code"] == "daily_limit_reached"
    assert (
        refused.json()["error"]
        == "Daily limit reached (10000 requests/day). Resets at midnight UTC."
    )
    assert _usage(api, key.key)["requests_today"] == 9_998
    two = ",".join(scenarios["share_classes"]["class_tickers"])
    assert _get(api, key.key, f"/v1/prices/{two}", limit=1).status_code == 200
    assert _usage(api, key.key)["requests_today"] == 10_000


def test_rows_today_and_the_row_allowances(at_ten_fifteen: RunningApi, scenarios: dict) -> None:
    api = at_ten_fifteen
    key = api.new_key("free")
    path = f"/v1/prices/{scenarios['plain']['ticker']}"
    first = _get(api, key.key, path, limit=5)
    assert first.headers["X-Rows-Today"] == "5" and first.headers["X-Entities-Today"] == "1"
    second = _get(api, key.key, path, limit=3)
    assert second.headers["X-Rows-Today"] == "8"
    # the hour's rows reach 100,000
    api.counters.add_usage(key.account.id, api.clock.now(), requests=0, rows=100_000 - 8)
    hourly = _get(api, key.key, path, limit=1)
    assert hourly.status_code == 429
    assert hourly.json() == {
        "error": "hourly_usage_limit",
        "code": "hourly_usage_limit",
        "status": 429,
        "detail": "Hourly usage limit reached. Try again shortly.",
    }
    api.clock.advance(dt.timedelta(hours=1))
    assert _get(api, key.key, path, limit=1).status_code == 200
    # the day's rows reach 500,000
    api.counters.add_usage(key.account.id, api.clock.now(), requests=0, rows=400_000)
    daily = _get(api, key.key, path, limit=1)
    assert daily.status_code == 429
    assert daily.json()["code"] == "row_limit_exceeded"
    assert daily.json()["detail"] == "Daily data volume limit reached. Resets at midnight UTC."
    assert "retry_after_seconds" not in daily.json()


def test_keyless_limits_per_address(at_ten_fifteen: RunningApi, scenarios: dict) -> None:
    api = at_ten_fifteen
    for used in range(1, 41):
        response = _get(api, None, "/v1/search", q=scenarios["plain"]["ticker"])
        assert response.status_code == 200
        assert response.headers["X-RateLimit-Limit-Day"] == "100"
        assert response.headers["X-RateLimit-Limit-Hour"] == "40"
        assert response.headers["X-RateLimit-Remaining-Hour"] == str(40 - used)
        assert "X-Rows-Today" not in response.headers  # keyless
    burst = _get(api, None, f"/v1/resolve/{scenarios['plain']['ticker']}")
    assert burst.status_code == 429 and burst.json()["code"] == "burst_limit_reached"
    again = _get(api, None, "/v1/search", q="a")
    assert again.status_code == 429
    body = again.json()
    assert body["code"] == "rate_limit_exceeded" and body["error"] == "Rate limit exceeded"
    assert body["retry_after_seconds"] == 45 * 60
    _no_quota_headers(again)
    # a key is the way out
    assert _get(api, api.new_key("free").key, "/v1/search", q="a").status_code == 200


def test_a_blocked_address(at_ten_fifteen: RunningApi) -> None:
    api = at_ten_fifteen
    block_ip(api.store.engine, "127.0.0.1", api.clock.now())
    try:
        refused = _get(api, None, "/v1/search", q="a")
        assert refused.status_code == 429
        body = refused.json()
        assert (body["code"], body["error"]) == ("temporarily_blocked", "Temporarily blocked")
        assert body["message"] != body["detail"] and "support" in body["message"]
        assert "retry_after_seconds" not in body
        _no_quota_headers(refused)
        # keyed requests from the address are served
        assert _get(api, api.new_key("pro").key, "/v1/search", q="a").status_code == 200
    finally:
        unblock_ip(api.store.engine, "127.0.0.1")
    assert _get(api, None, "/v1/search", q="a").status_code == 200


def test_free_index_as_of_allowance(
    at_ten_fifteen: RunningApi, sleeps: Sleeps, scenarios: dict
) -> None:
    api = at_ten_fifteen
    key = api.new_key("free")
    code = scenarios["index_events"]["index"]
    days = [dt.date(2024, 1, 1) + dt.timedelta(days=n) for n in range(52)]
    # hours of requests earlier: no burst limit
    api.counters.add_distinct(key.account.id, api.clock.now().date(), "as_of", [])
    waited = []
    for n, day in enumerate(days[:51], start=1):
        if n % 35 == 0:
            api.clock.advance(dt.timedelta(hours=1))  # stay under the hourly request limit
        sleeps.clear()
        response = _get(api, key.key, f"/v1/index/{code}", as_of=day.isoformat(), limit=1)
        assert response.status_code == 200, (n, response.text)
        waited.append(sum(sleeps))
    assert waited[:20] == [0] * 20
    assert waited[20] == pytest.approx(0.5) and waited[49] == pytest.approx(10)
    assert all(0 < w <= 10 for w in waited[20:50])
    assert waited[50] == 30  # the request that brings the day to 51 dates
    for day in (days[51], days[0]):  # every as_of request after it, also for known dates
        refused = _get(api, key.key, f"/v1/index/{code}", as_of=day.isoformat())
        assert refused.status_code == 429
        assert refused.json()["code"] == "asof_limit_exceeded"
        assert "retry_after_seconds" not in refused.json()
    assert _get(api, key.key, f"/v1/index/{code}", limit=1).status_code == 200
    assert _get(api, key.key, f"/v1/index/{code}/events", limit=1).status_code == 200
    api.clock.set(
        dt.datetime.combine(api.clock.now().date() + dt.timedelta(days=1), dt.time(), tzinfo=dt.UTC)
    )
    assert _get(api, key.key, f"/v1/index/{code}", as_of=days[0].isoformat()).status_code == 200


def test_answers_slow_as_the_daily_allowance_nears(
    at_ten_fifteen: RunningApi, sleeps: Sleeps, scenarios: dict
) -> None:
    api = at_ten_fifteen
    path = f"/v1/prices/{scenarios['plain']['ticker']}"
    free, pro = api.new_key("free"), api.new_key("pro")
    # 88 requests earlier today (two hours ago: this hour's burst allowance is untouched)
    api.counters.add_usage(free.account.id, api.clock.now() - dt.timedelta(hours=2), requests=88)
    waited = []
    for _ in range(12):  # requests 89 to 100
        sleeps.clear()
        assert _get(api, free.key, path, limit=1).status_code == 200
        waited.append(sum(sleeps))
    # plans.yaml: nothing up to 90 % of the day's requests, then up to 2 s at the last one
    assert waited == pytest.approx([0, 0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0])
    sleeps.clear()
    assert _get(api, free.key, path, limit=1).status_code == 429
    assert sleeps == []  # a refusal answers at once
    api.counters.add_usage(pro.account.id, api.clock.now(), requests=9_499)
    sleeps.clear()
    _get(api, pro.key, path, limit=1)  # request 9,500 of 10,000: half way up the curve
    assert sleeps == [pytest.approx(1.0)]


def test_free_slows_down_after_500_distinct_entities(
    at_ten_fifteen: RunningApi, sleeps: Sleeps, scenarios: dict
) -> None:
    api = at_ten_fifteen
    key = api.new_key("free")
    api.counters.add_distinct(
        key.account.id,
        api.clock.now().date(),
        "entity",
        [f"9{n}" for n in range(500)],
    )
    sleeps.clear()
    # a request of its own (a cached answer would carry no X-Entities-Today)
    path = f"/v1/prices/{scenarios['plain']['ticker']}"
    response = _get(api, key.key, path, start=before_as_of(scenarios, 30), limit=1)
    assert "Age" not in response.headers
    assert response.headers["X-Entities-Today"] == "501"
    assert sleeps == [pytest.approx(0.1)]
    paid = api.new_key("pro")
    api.counters.add_distinct(
        paid.account.id,
        api.clock.now().date(),
        "entity",
        [f"9{n}" for n in range(900)],
    )
    sleeps.clear()
    _get(api, paid.key, f"/v1/prices/{scenarios['plain']['ticker']}", limit=1)
    assert sleeps == []  # paid plans are counted, not slowed


def test_status_and_usage_carry_no_rate_limit_headers(at_ten_fifteen: RunningApi) -> None:
    api = at_ten_fifteen
    key = api.new_key("free").key
    for response in (_get(api, key, "/v1/status"), _get(api, key, "/v1/auth/usage")):
        assert response.status_code == 200
        _no_quota_headers(response)
    with api.client() as client:
        _no_quota_headers(client.post("/v1/status", headers={"X-API-Key": key}))


def test_client_notices_on_the_request_limit_429s_only(
    at_ten_fifteen: RunningApi, scenarios: dict
) -> None:
    api = at_ten_fifteen
    old = {"User-Agent": "findata-python/0.1.0"}
    bursting, snapshots = api.new_key("free"), api.new_key("free")
    api.counters.add_usage(bursting.account.id, api.clock.now(), requests=40)
    dates = [dt.date(2024, 1, 1) + dt.timedelta(days=n) for n in range(51)]
    api.counters.add_distinct(
        snapshots.account.id, api.clock.now().date(), "as_of",
        [day.isoformat() for day in dates],
    )  # fmt: skip
    with api.client() as client:
        client.headers.update(old)
        burst = client.get(
            f"/v1/prices/{scenarios['plain']['ticker']}", headers={"X-API-Key": bursting.key}
        )
        as_of = client.get(
            f"/v1/index/{scenarios['index_events']['index']}",
            params={"as_of": "2024-01-01"},
            headers={"X-API-Key": snapshots.key},
        )
    assert burst.status_code == 429 and burst.json()["code"] == "burst_limit_reached"
    assert burst.headers["X-Service-Client-Update"] == "true"
    assert as_of.status_code == 429 and as_of.json()["code"] == "asof_limit_exceeded"
    assert "X-Service-Client-Update" not in as_of.headers
