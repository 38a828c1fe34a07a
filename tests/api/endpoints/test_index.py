"""``/v1/index/{index_name}`` and ``/v1/index/{index_name}/events`` over real HTTP on the
published small demo: envelope and meta, the roster's date boundary (checked against a replay of
the events), offset paging walked page by page, row order, every 400 text, the Free floor (events
only) and the demo's index scenarios."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any

import httpx
import pytest

from findata.demo.sizes import SIZES
from tests.api.endpoints.api_calls import (
    assert_bad_request,
    before_as_of,
    free_floor,
    get,
    walk_offset_pages,
    without_change_cursor,
)
from tests.api.server import RunningApi

MEMBER_FIELDS = ["entity_id", "ticker", "entity_name", "added_date", "removed_date", "member_grain"]
EVENT_FIELDS = ["event", "effective_date", "entity_id", "ticker", "entity_name", "index"]


# kept here, not the shared module-wide free_key: each test gets a Free account of its own, so no
# test spends another's hourly Free allowance
@pytest.fixture
def free(api: RunningApi) -> str:
    """A fresh Free account per test (Free has an hourly request allowance)."""
    return api.new_key("free").key


@pytest.fixture(scope="module")
def events(api: RunningApi, pro_key: str, scenarios: dict) -> dict[str, list[dict[str, Any]]]:
    """Every event of every served index, read in one page each."""
    every = {}
    for code in scenarios["indexes"]:
        body = get(api, pro_key, f"/v1/index/{code}/events").json()
        assert body["meta"]["has_more"] is False
        every[code] = body["data"]
    return every


def _bad(response: httpx.Response, detail: str) -> None:
    """The spec's 400 body, without a Free-floor header."""
    assert_bad_request(response, detail)
    assert "X-Data-Floor" not in response.headers


def _roster(api: RunningApi, key: str, code: str, as_of: str | None = None) -> list[dict]:
    params = {"as_of": as_of} if as_of else {}
    response = get(api, key, f"/v1/index/{code}", **params)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["meta"]["has_more"] is False
    return body["data"]


def _replay(events: list[dict[str, Any]], day: str) -> Counter:
    """The members on ``day`` by entity_id, from the events that took effect on or before it."""
    members: Counter = Counter()
    for event in events:
        if event["effective_date"] <= day:
            members[event["entity_id"]] += 1 if event["event"] == "added" else -1
    assert all(n >= 0 for n in members.values())
    return +members


def _day_before(day: str) -> str:
    return (dt.date.fromisoformat(day) - dt.timedelta(days=1)).isoformat()


def _name_key(row: dict[str, Any]) -> tuple[bool, str]:
    """entity_name ascending, rows without a name last."""
    return (row["entity_name"] is None, row["entity_name"] or "")


def _event_key(row: dict[str, Any]) -> tuple[str, int, bool, str]:
    return (row["effective_date"], 0 if row["event"] == "added" else 1, *_name_key(row))


def test_roster_envelope_meta_and_headers(
    api: RunningApi, pro_key: str, scenarios: dict, events: dict
) -> None:
    response = get(api, pro_key, "/v1/index/sp500", limit=5)
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "public, max-age=86400"
    assert "X-Data-Floor" not in response.headers
    body = response.json()
    assert set(body) == {"data", "meta"}
    # the membership's data_through is its last added_date (over every index)
    last_addition = max(
        e["effective_date"] for rows in events.values() for e in rows if e["event"] == "added"
    )
    assert without_change_cursor(body["meta"]) == {
        "index": "SP500",
        "data_through": last_addition,
        "entity_id_grain": "security",
        "coverage_end": scenarios["as_of"],
        "count": 5,
        "limit": 5,
        "offset": 0,
        "total": SIZES["small"].sp500,
        "has_more": True,
    }
    for row in body["data"]:
        assert list(row) == MEMBER_FIELDS
        assert row["member_grain"] == "security" and row["removed_date"] is None
        assert isinstance(row["entity_id"], int) and row["added_date"] <= scenarios["as_of"]

    day = before_as_of(scenarios, 2 * 365)
    as_of = get(api, pro_key, "/v1/index/sp500", as_of=day, limit=1).json()["meta"]
    assert (as_of["index"], as_of["as_of"], as_of["total"]) == ("SP500", day, 60)


def test_events_envelope_meta_and_rows(
    api: RunningApi, pro_key: str, scenarios: dict, events: dict
) -> None:
    response = get(api, pro_key, "/v1/index/ndx100/events", limit=3)
    assert response.status_code == 200
    assert "X-Data-Floor" not in response.headers
    body = response.json()
    assert set(body) == {"data", "meta"}
    assert without_change_cursor(body["meta"]) == {
        "index": "NDX100",
        "data_through": max(e["effective_date"] for rows in events.values() for e in rows),
        "entity_id_grain": "security",
        "coverage_end": scenarios["as_of"],
        "count": 3,
        "limit": 3,
        "offset": 0,
        "total": len(events["ndx100"]),
        "has_more": True,
    }
    for code, rows in events.items():
        assert rows, code
        for row in rows:
            assert list(row) == EVENT_FIELDS
            assert row["index"] == code.upper() and row["event"] in ("added", "removed")


def test_current_roster_is_the_demo_size_and_the_replay_of_the_events(
    api: RunningApi, pro_key: str, scenarios: dict, events: dict
) -> None:
    for code in scenarios["indexes"]:
        roster = _roster(api, pro_key, code)
        assert len(roster) == getattr(SIZES["small"], code)
        assert Counter(row["entity_id"] for row in roster) == _replay(events[code], "9999-12-31")
        assert all(row["removed_date"] is None for row in roster)


def test_a_roster_on_each_event_date_and_the_day_before_replays_the_events(
    api: RunningApi, pro_key: str, events: dict
) -> None:
    """An event effective on D is in the roster of D and not in that of D-1: added_date is the
    first day in, removed_date the first day out. A roster shows no removal still to come."""
    for day in sorted({e["effective_date"] for e in events["sp500"]}):
        for on in (_day_before(day), day):
            roster = _roster(api, pro_key, "sp500", on)
            assert Counter(row["entity_id"] for row in roster) == _replay(events["sp500"], on)
            for row in roster:
                assert row["added_date"] <= on and row["removed_date"] is None


def test_removed_scenario_leaves_on_its_date(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    scenario = scenarios["index_events"]
    code, removed = scenario["index"], scenario["removed"]
    before = _roster(api, pro_key, code, _day_before(removed["date"]))
    before = [r for r in before if r["ticker"] == removed["ticker"]]
    # its last day as a member: the removal to come is not known yet
    assert len(before) == 1 and before[0]["removed_date"] is None
    for on in (removed["date"], scenarios["as_of"]):
        assert removed["ticker"] not in {r["ticker"] for r in _roster(api, pro_key, code, on)}
    assert removed["ticker"] not in {r["ticker"] for r in _roster(api, pro_key, code)}
    on_the_day = get(
        api, pro_key, f"/v1/index/{code}/events", start=removed["date"], end=removed["date"]
    ).json()["data"]
    assert {"event": "removed", "ticker": removed["ticker"]}.items() <= next(
        r for r in on_the_day if r["ticker"] == removed["ticker"]
    ).items()


def test_added_scenario_enters_on_its_date(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    scenario = scenarios["index_events"]
    code, added = scenario["index"], scenario["added"]
    on_the_day = _roster(api, pro_key, code, added["date"])
    on_the_day = [r for r in on_the_day if r["ticker"] == added["ticker"]]
    assert [(r["added_date"], r["removed_date"]) for r in on_the_day] == [(added["date"], None)]
    current = [r for r in _roster(api, pro_key, code) if r["ticker"] == added["ticker"]]
    assert [r["added_date"] for r in current] == [added["date"]]
    day_events = get(
        api, pro_key, f"/v1/index/{code}/events", start=added["date"], end=added["date"]
    ).json()["data"]
    assert any(r["event"] == "added" and r["ticker"] == added["ticker"] for r in day_events)
    # the interval that starts on the day is not in the roster of the day before
    before = _roster(api, pro_key, code, _day_before(added["date"]))
    assert added["date"] not in {r["added_date"] for r in before}


def test_added_scenario_was_not_a_member_the_day_before(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    scenario = scenarios["index_events"]
    code, added = scenario["index"], scenario["added"]
    day_events = get(
        api, pro_key, f"/v1/index/{code}/events", start=added["date"], end=added["date"]
    ).json()["data"]
    # the demo never removes a member and adds it back on one day (that would name a security
    # that never left the index)
    assert not any(r["event"] == "removed" and r["ticker"] == added["ticker"] for r in day_events)
    before = _roster(api, pro_key, code, _day_before(added["date"]))
    assert added["ticker"] not in {r["ticker"] for r in before}


def test_renamed_member_carries_the_ticker_of_the_roster_date(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    renamed = scenarios["renamed"]
    change = renamed["change_date"]
    on_the_day = {
        code: [
            r for r in _roster(api, pro_key, code, change) if r["entity_id"] == renamed["entity_id"]
        ]
        for code in scenarios["indexes"]
    }
    # the generator keeps the renamed company in the sp500 all along (demo/indexes.py)
    assert [(r["added_date"] < change, r["removed_date"]) for r in on_the_day["sp500"]] == [
        (True, None)
    ]
    for code, rows in on_the_day.items():
        if not rows:
            continue  # a member of this index by the rebalances only, not on that day
        labels = {change: renamed["new_ticker"]}
        if rows[0]["added_date"] < change:
            labels[_day_before(change)] = renamed["old_ticker"]
        if rows[0]["removed_date"] is None:
            labels[""] = renamed["new_ticker"]  # the current roster: today's ticker
        for on, ticker in labels.items():
            roster = _roster(api, pro_key, code, on or None)
            rows = [r for r in roster if r["entity_id"] == renamed["entity_id"]]
            assert [r["ticker"] for r in rows] == [ticker], (code, on)


def test_roster_walked_in_small_pages_is_sorted_without_skips(
    api: RunningApi, pro_key: str, scenarios: dict
) -> None:
    for as_of in (None, before_as_of(scenarios, 2 * 365)):
        params = {"as_of": as_of} if as_of else {}
        walked = walk_offset_pages(api, pro_key, "/v1/index/sp500", 7, **params)
        whole = get(api, pro_key, "/v1/index/sp500", limit=1000, **params).json()["data"]
        assert walked == whole
        assert [_name_key(r) for r in walked] == sorted(_name_key(r) for r in walked)
        keys = [(r["entity_id"], r["added_date"]) for r in walked]
        assert len(set(keys)) == len(keys) == len(walked)


def test_events_walked_in_small_pages_in_the_spec_order(
    api: RunningApi, pro_key: str, events: dict
) -> None:
    walked = walk_offset_pages(api, pro_key, "/v1/index/sp500/events", 9)
    assert walked == events["sp500"]
    assert [_event_key(r) for r in walked] == sorted(_event_key(r) for r in walked)
    keys = [(r["event"], r["effective_date"], r["entity_id"]) for r in walked]
    assert len(set(keys)) == len(keys)
    # added before removed on one date, shown on a date that has both
    both = next(
        day
        for day in sorted({r["effective_date"] for r in walked})
        if {r["event"] for r in walked if r["effective_date"] == day} == {"added", "removed"}
    )
    kinds = [r["event"] for r in walked if r["effective_date"] == both]
    assert kinds == sorted(kinds) and kinds[0] == "added" and kinds[-1] == "removed"
    # start and end are inclusive on effective_date
    on_the_day = get(api, pro_key, "/v1/index/sp500/events", start=both, end=both).json()
    assert on_the_day["data"] == [r for r in walked if r["effective_date"] == both]
    assert on_the_day["meta"]["total"] == len(kinds)


@pytest.mark.parametrize("path", ["/v1/index/djia", "/v1/index/djia/events"])
def test_offset_rules(api: RunningApi, pro_key: str, path: str) -> None:
    assert get(api, pro_key, path, limit="1000").json()["meta"]["limit"] == 1000
    assert get(api, pro_key, path, limit="").json()["meta"]["limit"] == 1000
    assert get(api, pro_key, path).json()["meta"]["limit"] == 1000
    assert get(api, pro_key, path, limit="5.0").json()["meta"]["limit"] == 5
    _bad(get(api, pro_key, path, limit="1001"), "limit max is 1000")
    for bad in ("0", "-1", "abc", "5.5", "1e3"):
        _bad(get(api, pro_key, path, limit=bad), "limit must be a positive integer")
    for bad in ("-1", "abc", "1.5"):
        _bad(get(api, pro_key, path, offset=bad), "offset must be a non-negative integer")
    total = get(api, pro_key, path).json()["meta"]["total"]
    past = get(api, pro_key, path, offset=total + 5).json()
    assert past["data"] == []
    assert (past["meta"]["count"], past["meta"]["total"], past["meta"]["has_more"]) == (
        0,
        total,
        False,
    )
    last = get(api, pro_key, path, offset=total - 1, limit=1).json()["meta"]
    assert (last["count"], last["has_more"]) == (1, False)


def test_index_codes_and_unknown_index(api: RunningApi, pro_key: str, scenarios: dict) -> None:
    available = ", ".join(sorted(scenarios["indexes"]))
    assert available == "djia, ndx100, sp500"
    for path in ("/v1/index/{}", "/v1/index/{}/events"):
        _bad(
            get(api, pro_key, path.format("nasdaq")),
            f"Unknown index: nasdaq. Available: {available}",
        )
        _bad(get(api, pro_key, path.format("SPX")), f"Unknown index: SPX. Available: {available}")
        # any letter case reads the same index; bodies carry the code upper case
        lower = get(api, pro_key, path.format("sp500"), limit=3).json()
        assert get(api, pro_key, path.format("SP500"), limit=3).json() == lower
        assert get(api, pro_key, path.format("Sp500"), limit=3).json() == lower
        assert lower["meta"]["index"] == "SP500"


def test_as_of_rules(api: RunningApi, pro_key: str) -> None:
    for bad in ("2024-02-30", "2024-2-01", "20240201", "yesterday", "2024-13-01"):
        _bad(
            get(api, pro_key, "/v1/index/sp500", as_of=bad),
            f"Invalid as_of date: '{bad}' (expected a real YYYY-MM-DD date)",
        )
    empty = get(api, pro_key, "/v1/index/sp500", as_of="").json()
    assert empty == get(api, pro_key, "/v1/index/sp500").json() and "as_of" not in empty["meta"]
    # before the first membership there are no members; a later date is the roster known now
    assert get(api, pro_key, "/v1/index/sp500", as_of="1999-12-31").json()["data"] == []
    future = get(api, pro_key, "/v1/index/sp500", as_of="2100-01-01").json()
    current = get(api, pro_key, "/v1/index/sp500").json()
    assert future["data"] == current["data"] and future["meta"]["as_of"] == "2100-01-01"
    leap = get(api, pro_key, "/v1/index/sp500", as_of="2024-02-29")
    assert leap.status_code == 200 and leap.json()["meta"]["as_of"] == "2024-02-29"


def test_events_date_rules(api: RunningApi, pro_key: str) -> None:
    path = "/v1/index/sp500/events"
    _bad(get(api, pro_key, path, start="2024-02-30"), "Invalid start date format (YYYY-MM-DD)")
    _bad(get(api, pro_key, path, start="2024-1-01"), "Invalid start date format (YYYY-MM-DD)")
    _bad(
        get(api, pro_key, path, end="2024-13-01"),
        "Invalid end date: '2024-13-01' (expected a date from 0001-01-01 to 9999-12-31 on this "
        "endpoint)",
    )
    _bad(
        get(api, pro_key, path, start="2024-03-10", end="2024-03-09"),
        "end (2024-03-09) is before start (2024-03-10)",
    )


def test_free_floor_applies_to_events(
    api: RunningApi, free: str, pro_key: str, events: dict
) -> None:
    response = get(api, free, "/v1/index/sp500/events")
    assert response.status_code == 200
    floor = response.headers["X-Data-Floor"]
    assert floor == free_floor(api.clock.now().date()).isoformat()
    body = response.json()
    assert body["warnings"] == [
        f"Free plan history starts at {floor} (one year before today, UTC); rows before it are "
        "not returned. Upgrade to Pro for full history."
    ]
    inside = [r for r in events["sp500"] if r["effective_date"] >= floor]
    assert len(inside) < len(events["sp500"]), "the demo has events before the Free floor"
    assert body["data"] == inside and body["meta"]["total"] == len(inside)
    # a start inside the floor: no notice; a window ending before it: no rows, and says so
    later = get(api, free, "/v1/index/sp500/events", start=floor)
    assert "warnings" not in later.json() and later.headers["X-Data-Floor"] == floor
    long_before, end_before = (
        (dt.date.fromisoformat(floor) - dt.timedelta(days=d)).isoformat() for d in (730, 365)
    )
    early = get(api, free, "/v1/index/sp500/events", start=long_before, end=end_before)
    assert early.json()["data"] == [] and early.json()["meta"]["total"] == 0
    assert early.json()["warnings"] == [
        f"Free plan history starts at {floor} (one year before today, UTC); the requested window "
        "ends before it, so there are no rows. Upgrade to Pro for full history."
    ]


def test_free_floor_does_not_apply_to_rosters(
    api: RunningApi, free: str, pro_key: str, scenarios: dict
) -> None:
    # rosters long before the Free floor are served whole, without a notice
    old = scenarios["index_events"]["removed"]["date"]
    long_ago = before_as_of(scenarios, 4 * 365)
    for params in ({}, {"as_of": long_ago}, {"as_of": _day_before(old)}):
        response = get(api, free, "/v1/index/sp500", **params)
        assert response.status_code == 200
        assert "X-Data-Floor" not in response.headers
        body, paid = response.json(), get(api, pro_key, "/v1/index/sp500", **params).json()
        assert body["data"] == paid["data"] and body["meta"]["total"] == paid["meta"]["total"]
        assert "warnings" not in body


def test_unknown_parameters_are_named_with_suggestions(api: RunningApi, pro_key: str) -> None:
    roster = get(api, pro_key, "/v1/index/djia", asof="2024-01-02", start="2024-01-01", foo="1")
    assert roster.status_code == 200
    assert roster.json()["warnings"] == [
        "Unknown parameter ignored: 'asof'. Did you mean 'as_of'?",
        "Unknown parameter ignored: 'start'",
        "Unknown parameter ignored: 'foo'",
    ]
    assert "as_of" not in roster.json()["meta"]
    events = get(api, pro_key, "/v1/index/djia/events", **{"from": "2024-01-01"}, page_size="5")
    assert events.json()["warnings"] == [
        "Unknown parameter ignored: 'from'. Did you mean 'start'?",
        "Unknown parameter ignored: 'page_size'. Did you mean 'limit'?",
    ]
    assert events.json()["meta"]["limit"] == 1000


def test_a_key_is_required(api: RunningApi) -> None:
    for path in ("/v1/index/sp500", "/v1/index/sp500/events", "/v1/index/nope"):
        response = get(api, None, path)
        assert response.status_code == 401 and response.json()["code"] == "unauthorized"
