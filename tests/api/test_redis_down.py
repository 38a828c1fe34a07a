"""Redis out of reach (stopped, or never there): the response cache falls back to answering
afresh; quota counters kept in Redis refuse safely — the spec's 500 ``internal_error`` (retry
after a short wait), nothing counted — rather than admitting requests they cannot count."""

from __future__ import annotations

from pathlib import Path

from findata.api.app import create_app
from findata.settings import Settings
from tests.api.server import free_port, serve, start_clock


def _redis_nowhere() -> str:
    return f"redis://127.0.0.1:{free_port()}/0"


def test_the_cache_falls_back_to_answering_afresh(published_home: Path, scenarios: dict) -> None:
    clock = start_clock()
    settings = Settings(home=published_home, cache_url=_redis_nowhere(), usage_counters="memory")
    with serve(create_app(settings, clock), clock) as api:
        key = api.new_key("pro").key
        path = f"/v1/prices/{scenarios['plain']['ticker']}"
        with api.client() as client:
            answers = [client.get(path, params={"limit": 2}, headers={"X-API-Key": key})
                       for _ in range(2)]  # fmt: skip
            usage = client.get("/v1/auth/usage", headers={"X-API-Key": key}).json()
    assert [a.status_code for a in answers] == [200, 200]
    assert "Age" not in answers[1].headers  # nothing was kept
    assert usage["requests_today"] == 2


def test_counters_in_redis_refuse_safely(published_home: Path, scenarios: dict) -> None:
    clock = start_clock()
    settings = Settings(home=published_home, cache_url=_redis_nowhere())
    with serve(create_app(settings, clock), clock) as api:
        assert api.counters.kind == "redis"
        key = api.new_key("pro")
        with api.client() as client:
            refused = client.get(
                f"/v1/prices/{scenarios['plain']['ticker']}", headers={"X-API-Key": key.key}
            )
            status = client.get("/v1/status")
    assert refused.status_code == 500
    assert refused.json()["code"] == "internal_error"
    assert refused.json()["detail"] == "Internal server error. Retry after a short wait."
    assert status.status_code == 200  # what counts nothing is served
