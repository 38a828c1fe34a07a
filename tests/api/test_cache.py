"""The response cache over real HTTP: cached answers carry ``Age``, count requests but add no rows,
never cross plans' views, and are shared between workers through Redis when configured."""

from __future__ import annotations

import datetime as dt
import tracemalloc
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from findata.api.app import create_app
from findata.api.cache import CachedAnswer, MemoryCache
from findata.api.responses import json_bytes
from findata.settings import Settings
from tests.api.endpoints.api_calls import before_as_of
from tests.api.server import RunningApi, serve, start_clock


def _usage(api: RunningApi, key: str) -> dict:
    with api.client() as client:
        return client.get("/v1/auth/usage", headers={"X-API-Key": key}).json()


def test_a_cached_answer(api: RunningApi, scenarios: dict) -> None:
    key = api.new_key("pro").key
    path = f"/v1/prices/{scenarios['plain']['ticker']}"
    params = {"start": before_as_of(scenarios, 60), "limit": 7, "cache-test": uuid.uuid4().hex}
    with api.client() as client:
        client.headers["X-API-Key"] = key
        first = client.get(path, params=params)
        assert "Age" not in first.headers and first.headers["X-Rows-Today"] == "7"
        api.clock.advance(dt.timedelta(seconds=30))
        second = client.get(path, params=params)
    assert second.status_code == 200 and second.content == first.content
    assert second.headers["Age"] == "30"
    assert "X-Rows-Today" not in second.headers and "X-Entities-Today" not in second.headers
    assert second.headers["X-RateLimit-Remaining-Day"] == str(10_000 - 2)
    assert second.headers["Cache-Control"] == "public, max-age=86400"
    usage = _usage(api, key)
    assert (usage["requests_today"], usage["rows_today"]) == (2, 7)  # counted, no rows added


def test_plans_never_see_each_others_answers(api: RunningApi, scenarios: dict) -> None:
    path = f"/v1/prices/{scenarios['plain']['ticker']}"
    params = {"start": "2020-01-01", "limit": 3, "cache-test": uuid.uuid4().hex}
    with api.client() as client:
        free = client.get(path, params=params, headers={"X-API-Key": api.new_key("free").key})
        pro = client.get(path, params=params, headers={"X-API-Key": api.new_key("pro").key})
        free_again = client.get(path, params=params, headers={"X-API-Key": api.new_key("free").key})
    assert "Age" not in pro.headers and "X-Data-Floor" not in pro.headers
    assert not [w for w in pro.json()["warnings"] if w.startswith("Free plan history")]
    assert pro.json()["data"][0]["date"] < free.json()["data"][0]["date"]
    assert free_again.headers["Age"] == "0" and free_again.content == free.content
    assert free_again.headers["X-Data-Floor"] == free.headers["X-Data-Floor"]


def test_keyless_resolve_is_not_kept(api: RunningApi, scenarios: dict) -> None:
    path = f"/v1/resolve/{scenarios['plain']['ticker']}"
    with api.client() as client:
        client.get(path)
        again = client.get(path)
        keyed = client.get(path, headers={"X-API-Key": api.new_key("pro").key})
    assert "Age" not in again.headers and again.headers["Cache-Control"] == "no-store"
    assert "restricted" in again.json() and "restricted" not in keyed.json()


def _answer(size: int) -> CachedAnswer:
    return CachedAnswer(b"x" * size, {}, 0.0, 1, [])


def test_the_memory_cache_holds_its_bytes_least_recently_used_out_first() -> None:
    """A worker's cache is bounded by its answers' bytes (``response_cache_mb``), not by how
    many there are: an answer of several megabytes counts as what it is."""
    cache = MemoryCache(max_bytes=1000)
    for name in ("a", "b", "c"):
        cache.put(name, _answer(300))
    assert cache.get("a") is not None  # now the most recently used
    cache.put("d", _answer(300))  # 1,200 bytes: b, the least recently used, goes
    assert [cache.get(n) is not None for n in "abcd"] == [True, False, True, True]
    cache.put("c", _answer(100))  # a key put again counts once, at its new size
    assert cache.held_bytes == 700
    cache.put("huge", _answer(1001))  # larger than the whole: not kept, nothing evicted
    assert cache.get("huge") is None and cache.held_bytes == 700
    cache.put("e", _answer(900))  # a then d go (the oldest); c's 100 bytes fit beside e
    assert [cache.get(n) is not None for n in "acde"] == [False, True, False, True]
    assert cache.held_bytes == 1000
    assert MemoryCache(max_bytes=0).get("a") is None


def test_the_memory_cache_holds_about_the_bytes_it_counts() -> None:
    """Answers as the API makes them (orjson, whose buffers are kilobytes for a short answer)
    are held at their own size: the budget counts what the worker holds."""
    cache = MemoryCache(max_bytes=2**30)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(1000):
            body = json_bytes({"data": [{"entity_id": n, "ticker": "ABC"}], "meta": {"n": n}})
            cache.put(str(n), CachedAnswer(body, {}, 0.0, 1, [n]))
        taken = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # beyond the bodies: each answer's record, its key and the cache's own slot
    assert taken <= cache.held_bytes + 1000 * 600, (taken, cache.held_bytes)


@pytest.fixture
def two_workers_on_redis(published_home: Path) -> Iterator[tuple[RunningApi, RunningApi]]:
    """Two app instances (as two workers would be) sharing the machine's Redis."""
    clock = start_clock()
    settings = Settings(home=published_home, cache_url="redis://127.0.0.1:6379/0")
    with (
        serve(create_app(settings, clock), clock) as first,
        serve(create_app(settings, clock), clock) as second,
    ):
        yield first, second


def test_workers_share_answers_through_redis(
    two_workers_on_redis: tuple[RunningApi, RunningApi], scenarios: dict
) -> None:
    first, second = two_workers_on_redis
    key = first.new_key("pro").key
    path = f"/v1/prices/{scenarios['plain']['ticker']}"
    params = {"limit": 4, "cache-test": uuid.uuid4().hex}
    with first.client() as client:
        answered = client.get(path, params=params, headers={"X-API-Key": key})
    first.clock.advance(dt.timedelta(seconds=12))
    with second.client() as client:
        cached = client.get(path, params=params, headers={"X-API-Key": key})
    assert "Age" not in answered.headers
    assert cached.headers["Age"] == "12" and cached.content == answered.content
