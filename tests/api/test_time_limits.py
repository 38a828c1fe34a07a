"""Time limits (spec "Errors", 504): a DuckDB query past its limit is interrupted and answers
``query_timeout``; a request past its limit answers ``request_timeout``; both with the spec's
detail, both counted as 5xx answers that reached the quota check. The limits are settings; the
heavy request is 100 securities x full history x ``adjust=split`` x ``interval=1w``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pytest

from findata.api.app import create_app
from findata.api.errors import ApiError
from findata.api.time_limits import request_time_limit, run_query
from findata.settings import Settings
from tests.api.server import RunningApi, serve, start_clock


def heavy(api: RunningApi, key: str) -> dict[str, str]:
    """A hundred securities' whole history, split-adjusted, in weekly bars."""
    with api.client() as client:
        listed = client.get("/v1/search", params={"limit": 500}, headers={"X-API-Key": key})
    ids = [r["entity_id"] for r in listed.json()["data"] if r["entity_grain"] == "security"]
    assert len(ids) >= 100
    return {
        "entity_id": ",".join(map(str, ids[:100])),
        **{"adjust": "split", "interval": "1w", "limit": "5000"},
    }


@contextmanager
def limited_api(home: Path, **limits: float) -> Iterator[RunningApi]:
    """The published demo served with other time limits."""
    clock = start_clock()
    with serve(create_app(Settings(home=home, **limits), clock), clock) as running:
        yield running


def prices(api: RunningApi, key: str, params: dict[str, str]) -> Any:
    with api.client() as client:
        return client.get("/v1/prices", params=params, headers={"X-API-Key": key})


def usage(api: RunningApi, key: str) -> int:
    with api.client() as client:
        return client.get("/v1/auth/usage", headers={"X-API-Key": key}).json()["requests_today"]


def test_the_heavy_request_is_answered_within_the_default_limits(api: RunningApi) -> None:
    key = api.new_key("max").key
    answer = prices(api, key, heavy(api, key))
    assert answer.status_code == 200, answer.text
    assert len(answer.json()["data"]) > 1000


def test_a_query_past_its_limit_is_interrupted_and_answers_query_timeout(
    api: RunningApi, published_home: Path
) -> None:
    params = heavy(api, api.new_key("max").key)
    with limited_api(published_home, query_timeout_seconds=0.001) as api:
        key = api.new_key("max").key
        before = usage(api, key)
        answer = prices(api, key, params)
        assert answer.status_code == 504
        assert answer.json() == {
            "error": "query_timeout",
            "code": "query_timeout",
            "status": 504,
            "detail": "Query exceeded time limit",
        }
        assert "X-RateLimit-Remaining-Day" not in answer.headers  # no quota headers on a 5xx
        # a 5xx that reached the quota check counts, one per entity_id sent
        assert usage(api, key) == before + 100


def test_a_request_past_its_limit_answers_request_timeout(
    api: RunningApi, published_home: Path
) -> None:
    params = heavy(api, api.new_key("max").key)
    with limited_api(published_home, request_timeout_seconds=0.001) as api:
        answer = prices(api, api.new_key("max").key, params)
        assert answer.status_code == 504
        assert answer.json()["code"] == "request_timeout"
        assert answer.json()["detail"] == "Request exceeded time limit"


def test_an_interrupt_that_comes_before_the_query_runs_is_repeated() -> None:
    """DuckDB drops an interrupt that finds no query running yet: a limit shorter than the time
    to start the query must still stop it (the watchdog interrupts again until disarmed)."""
    database = duckdb.connect()
    for _ in range(30):
        cursor = database.cursor()
        with pytest.raises(ApiError) as stopped, request_time_limit(30, 0.00001):
            run_query(cursor, "SELECT sum(range) FROM range(100000000)", {})
        assert stopped.value.code == "query_timeout"
