"""The spec's "Response headers" table, status by status: which answers carry the rate-limit,
row, entity, floor and Age headers, and which never do."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.api.endpoints.api_calls import before_as_of
from tests.api.server import RunningApi

RATE = {"X-RateLimit-Limit-Day", "X-RateLimit-Remaining-Day"}
HOURLY = {"X-RateLimit-Limit-Hour", "X-RateLimit-Remaining-Hour"}
TODAY = {"X-Rows-Today", "X-Entities-Today"}
ALL = RATE | HOURLY | TODAY | {"X-Data-Floor", "Age"}


def _present(response: httpx.Response) -> set[str]:
    return {name for name in ALL if name in response.headers}


@pytest.fixture(scope="module")
def answers(api: RunningApi, scenarios: dict) -> dict[str, httpx.Response]:
    """One response of each kind in the table."""
    plain = scenarios["plain"]["ticker"]
    ambiguous = scenarios["ambiguous"]
    index = scenarios["index_events"]["index"]
    pro, free, free_other = (api.new_key(p).key for p in ("pro", "free", "free"))
    disabled = api.new_key("pro")
    api.store.set_state(disabled.account.id, "disabled")
    fresh = {"start": before_as_of(scenarios, 30), "limit": 2, "headers-test": uuid.uuid4().hex}
    with api.client() as client:

        def get(path: str, key: str | None = None, **params: object) -> httpx.Response:
            return client.get(path, params=params, headers={"X-API-Key": key} if key else {})

        result = {
            "200 pro": get(f"/v1/prices/{plain}", pro, **fresh),
            "200 free": get(f"/v1/prices/{plain}", free, **fresh),
            "200 free cached": get(f"/v1/prices/{plain}", free_other, **fresh),
            "200 free index roster": get(f"/v1/index/{index}", free, limit=1),
            "200 free index events": get(f"/v1/index/{index}/events", free, limit=1),
            # a query of its own: an answer cached by another test would carry Age
            "200 keyless search": get("/v1/search", q=plain, limit=43),
            "200 keyless resolve": get(f"/v1/resolve/{plain}"),
            "404 data": get("/v1/prices/ZZZQX", pro),
            "409": get(f"/v1/prices/{ambiguous['ticker']}", pro, end=ambiguous["date"]),
            "400": get(f"/v1/prices/{plain}", pro, start="bad"),
            "401": get(f"/v1/prices/{plain}"),
            "402": get(f"/v1/holdings/{plain}", free),
            "403": get(f"/v1/prices/{plain}", disabled.key),
            "405": client.post(f"/v1/prices/{plain}", headers={"X-API-Key": pro}),
            "404 unknown endpoint": get("/v1/unknown", pro),
            "status": get("/v1/status", pro),
        }
    return result


EXPECTED = {
    "200 pro": RATE | TODAY,
    "200 free": RATE | HOURLY | TODAY | {"X-Data-Floor"},
    "200 free cached": RATE | HOURLY | {"X-Data-Floor", "Age"},
    "200 free index roster": RATE | HOURLY | TODAY,
    "200 free index events": RATE | HOURLY | TODAY | {"X-Data-Floor"},
    "200 keyless search": RATE | HOURLY,
    "200 keyless resolve": RATE | HOURLY,
    "404 data": RATE,
    "409": RATE,
    "400": set(),
    "401": set(),
    "402": set(),
    "403": set(),
    "405": set(),
    "404 unknown endpoint": set(),
    "status": set(),
}


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_headers_of_each_status(answers: dict[str, httpx.Response], kind: str) -> None:
    response = answers[kind]
    assert response.status_code == (int(kind[:3]) if kind[0].isdigit() else 200)
    assert _present(response) == EXPECTED[kind]
    assert "Retry-After" not in response.headers
    assert "Access-Control-Expose-Headers" in response.headers
