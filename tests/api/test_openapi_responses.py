"""The OpenAPI document describes real responses: every endpoint asked as each kind of client
would (every plan, keyless, bad parameters, unknown and ambiguous tickers, exhausted quotas, an
expired change cursor), each answer's body validated against the schema of its route and status
(fields typed and nullable as the dataset contracts say, no field the document does not name),
and its spec headers documented there."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from findata.contracts.endpoints import endpoint_names, load_endpoint_contract
from tests.api.openapi_check import OpenApiDocument
from tests.api.server import RunningApi


@pytest.fixture(scope="module")
def document(api: RunningApi) -> OpenApiDocument:
    with api.client() as client:
        return OpenApiDocument(client.get("/openapi.json").json())


def _requests(scenarios: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    """Paths and parameters that reach every answer of every endpoint."""
    plain, shared = scenarios["plain"]["ticker"], scenarios["share_classes"]["shared_ticker"]
    ambiguous, manager = scenarios["ambiguous"]["ticker"], scenarios["managers"]["manager_id"]
    index = scenarios["index_events"]["index"]
    return [
        ("/v1/search", {"q": plain}),
        ("/v1/search", {"q": "a", "limit": "3", "offset": "2"}),
        ("/v1/search", {"offset": "x"}),
        (f"/v1/resolve/{plain},{shared},ZZZQ", {}),
        (f"/v1/resolve/{ambiguous}", {"date": scenarios["ambiguous"]["date"]}),
        (f"/v1/resolve/{scenarios['reused']['ticker']}", {"date": "2022-01-03"}),
        ("/v1/resolve/ZZZQ", {}),
        (f"/v1/prices/{plain}", {"limit": "3"}),
        (f"/v1/prices/{plain},{shared},ZZZQ", {"limit": "3", "fields": "close,nope"}),
        (f"/v1/prices/{plain}", {"interval": "1mo", "adjust": "split", "limit": "2"}),
        ("/v1/prices", {"entity_id": str(scenarios["plain"]["entity_id"]), "limit": "2"}),
        (f"/v1/prices/{ambiguous}", {"end": scenarios["ambiguous"]["date"]}),
        ("/v1/prices/ZZZQ", {}),
        (f"/v1/prices/{plain}", {"start": "2024-02-30"}),
        (f"/v1/fundamentals/{scenarios['restatement']['ticker']}", {"limit": "2"}),
        (f"/v1/fundamentals/{plain}", {"view": "as_reported", "limit": "2"}),
        (f"/v1/fundamentals/{shared}", {"limit": "2"}),
        ("/v1/fundamentals", {"entity_id": str(scenarios["plain"]["entity_id"]), "limit": "1"}),
        (f"/v1/metrics/{plain}", {"limit": "2"}),
        ("/v1/metrics", {"entity_id": str(scenarios["share_classes"]["issuer_entity_id"])}),
        (f"/v1/metrics/{shared}", {"limit": "2"}),
        (f"/v1/insiders/{scenarios['insiders']['ticker']}", {"limit": "2"}),
        (f"/v1/holdings/{scenarios['holdings']['ticker']}", {"limit": "2"}),
        (f"/v1/holdings/{plain}", {"include_superseded": "true", "limit": "2"}),
        ("/v1/holdings", {"entity_id": str(scenarios["share_classes"]["issuer_entity_id"])}),
        ("/v1/insiders", {"entity_id": str(scenarios["share_classes"]["issuer_entity_id"])}),
        ("/v1/managers", {"q": scenarios["managers"]["search"], "limit": "2"}),
        (f"/v1/managers/{manager}/holdings", {"limit": "2"}),
        ("/v1/managers/99999999/holdings", {}),
        (f"/v1/index/{index}", {"limit": "2"}),
        (f"/v1/index/{index}", {"as_of": "2024-06-28", "limit": "2"}),
        ("/v1/index/nosuchindex", {}),
        (f"/v1/index/{index}/events", {"limit": "2"}),
        ("/v1/changes", {"limit": "2"}),
        ("/v1/changes", {"since": "1999-01-01"}),
        ("/v1/changes", {"since": "chg_999999999999"}),
        ("/v1/status", {}),
        ("/v1/auth/usage", {}),
    ]


def test_real_responses_match_the_openapi_document(
    api: RunningApi, document: OpenApiDocument, scenarios: dict[str, Any]
) -> None:
    keys = {plan: api.new_key(plan).key for plan in ("free", "pro", "max", "redistribution")}
    old_client = {"User-Agent": "findata-python/0.1.0"}  # draws the client notice headers
    with api.client() as client:
        for path, params in _requests(scenarios):
            for key in [*keys.values(), None, "fdk_" + "0" * 32]:
                headers = {"X-API-Key": key} if key else {}
                document.check(client.get(path, params=params, headers={**headers, **old_client}))
        spent = api.new_key("free")
        api.counters.add_usage(spent.account.id, api.clock.now(), requests=100)
        plain = scenarios["plain"]["ticker"]
        for path in (f"/v1/prices/{plain}", f"/v1/metrics/{plain}", "/v1/index/sp500"):
            refused = client.get(path, headers={"X-API-Key": spent.key})
            assert refused.status_code == 429
            document.check(refused)
        cached = client.get(f"/v1/prices/{scenarios['plain']['ticker']}", params={"limit": "3"},
                            headers={"X-API-Key": keys["pro"]})  # fmt: skip
        assert "Age" in cached.headers
        document.check(cached)

    statuses = {status for (_template, status) in document.checked}
    assert {200, 400, 401, 402, 404, 409, 410, 429} <= statuses
    templates = {template for (template, status) in document.checked if status == 200}
    every_route = {p for n in endpoint_names() for p in load_endpoint_contract(n).paths}
    assert templates == every_route  # a 200 of every route was checked


def test_every_route_documents_its_answers(document: OpenApiDocument) -> None:
    for name in endpoint_names():
        contract = load_endpoint_contract(name)
        for path in contract.paths:
            responses = document.document["paths"][path]["get"]["responses"]
            assert "422" not in responses  # a parameter problem is the spec's 400
            assert {"200", "400", "500"} <= set(responses), path
            body = responses["200"]["content"]["application/json"]["schema"]
            assert body["type"] == "object"
            error = responses["400"]["content"]["application/json"]["schema"]
            assert error["required"] == ["error", "code", "status", "detail"]
            if contract.capability:
                assert "402" in responses
            if contract.counts_per != "none":
                assert "X-RateLimit-Remaining-Day" in responses["200"]["headers"]


def test_the_document_is_checked_strictly(document: OpenApiDocument) -> None:
    """The check fails on a body the document does not allow (it is not a check that passes
    whatever it is given)."""
    request = httpx.Request("GET", "http://test/v1/prices/NOC")
    row = {"entity_id": "2000001", "ticker": "NOC"}  # an id as text, required fields missing
    wrong = httpx.Response(200, json={"data": [row], "meta": {"count": 1}}, request=request)
    with pytest.raises(AssertionError):
        document.check(wrong)
    extra = httpx.Response(
        400,
        json={"error": "x", "code": "not_a_code", "status": 400, "detail": "d"},
        request=request,
    )
    with pytest.raises(AssertionError):
        document.check(extra)


def test_the_change_feed_link_is_declared_where_answers_carry_its_cursor(
    api: RunningApi, document: OpenApiDocument, scenarios: dict[str, Any]
) -> None:
    """Issue 42 point 7: the ``changesSince`` link (and ``meta.change_cursor``) is declared on
    exactly the routes whose keyed answers carry ``meta.change_cursor``."""
    key = api.new_key("redistribution").key
    seen: dict[str, bool] = {}
    with api.client() as client:
        for path, params in _requests(scenarios):
            answer = client.get(path, params=params, headers={"X-API-Key": key})
            if answer.status_code != 200:
                continue
            template = document.template_of(answer.request.url.path)
            carried = "change_cursor" in answer.json().get("meta", {})
            assert seen.setdefault(template, carried) == carried, template
            declared = document.document["paths"][template]["get"]["responses"]["200"]
            assert ("changesSince" in declared.get("links", {})) == carried, template
            meta = declared["content"]["application/json"]["schema"]["properties"].get("meta", {})
            assert ("change_cursor" in meta.get("properties", {})) == carried, template
    every_route = {p for n in endpoint_names() for p in load_endpoint_contract(n).paths}
    assert set(seen) == every_route
    assert not seen["/v1/changes"] and not seen["/v1/search"] and seen["/v1/prices/{tickers}"]
