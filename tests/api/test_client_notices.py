"""Client version notices (spec "Versioning"): an outdated findata-python gets the four headers
on exactly the responses the spec lists."""

from __future__ import annotations

import httpx
import pytest

from tests.api.server import RunningApi

OLD = "findata-python/0.9.3 (python 3.11)"
NOTICE = (
    "findata-python 0.9.3 is outdated; the recommended version is 1.0.0. Upgrade with: "
    "pip install --upgrade 'findata-python>=1.0.0'"
)


def _get(api: RunningApi, path: str, agent: str, key: str | None = None, **params: object):
    headers = {"User-Agent": agent, **({"X-API-Key": key} if key else {})}
    with api.client() as client:
        return client.get(path, params=params, headers=headers)


def _noticed(response: httpx.Response) -> bool:
    names = (
        "X-Service-Client-Latest",
        "X-Service-Client-Update",
        "X-Service-Client-Update-Message",
    )
    present = [name in response.headers for name in (*names, "Warning")]
    assert all(present) or not any(present), response.headers
    return all(present)


def test_the_notice_headers(api: RunningApi, scenarios: dict) -> None:
    key = api.new_key("pro").key
    response = _get(api, f"/v1/prices/{scenarios['plain']['ticker']}", OLD, key, limit=1)
    assert response.status_code == 200
    assert response.headers["X-Service-Client-Latest"] == "1.0.0"
    assert response.headers["X-Service-Client-Update"] == "true"
    assert response.headers["X-Service-Client-Update-Message"] == NOTICE
    assert response.headers["Warning"] == f'299 findata "{NOTICE}"'


@pytest.mark.parametrize(
    "agent", ["findata-python/1.0.0", "findata-python/1.4.2", "python-httpx/0.28.1", "curl/8.5"]
)
def test_no_notice_for_current_or_other_clients(
    api: RunningApi, agent: str, scenarios: dict
) -> None:
    key = api.new_key("pro").key
    assert not _noticed(_get(api, f"/v1/prices/{scenarios['plain']['ticker']}", agent, key))
    assert not _noticed(_get(api, "/v1/status", agent))


def test_exactly_the_listed_responses(api: RunningApi, scenarios: dict) -> None:
    pro = api.new_key("pro").key
    free = api.new_key("free").key
    disabled = api.new_key("pro")
    api.store.set_state(disabled.account.id, "disabled")
    plain = scenarios["plain"]["ticker"]
    ambiguous = scenarios["ambiguous"]
    noticed = {
        "200 data": _get(api, f"/v1/prices/{plain}", OLD, pro, limit=1),
        "400": _get(api, f"/v1/prices/{plain}", OLD, pro, start="2026-02-30"),
        "402": _get(api, f"/v1/insiders/{scenarios['insiders']['ticker']}", OLD, free),
        "404": _get(api, "/v1/prices/ZZZQQ", OLD, pro),
        "409": _get(api, f"/v1/prices/{ambiguous['ticker']}", OLD, pro, end=ambiguous["date"]),
        "status": _get(api, "/v1/status", OLD),
        "usage": _get(api, "/v1/auth/usage", OLD, pro),
    }
    for name, response in noticed.items():
        assert _noticed(response), (name, response.status_code)
    with api.client() as client:
        method = client.post("/v1/status", headers={"User-Agent": OLD})
    silent = {
        "401": _get(api, f"/v1/prices/{plain}", OLD),
        "403": _get(api, f"/v1/prices/{plain}", OLD, disabled.key),
        "405": method,
        "unknown endpoint": _get(api, "/v1/nothing-here", OLD, pro),
    }
    for name, response in silent.items():
        assert not _noticed(response), (name, response.status_code)
