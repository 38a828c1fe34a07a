"""Routes come from contracts: every endpoint of the spec has a contract and a route, OpenAPI
documents every parameter with its allowed values, and random query strings on every endpoint
get 200 or one of the spec's 4xx — never a 500, never FastAPI's 422 — with a body and headers
the OpenAPI document allows."""

from __future__ import annotations

import string
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from findata.contracts.endpoints import endpoint_names, load_endpoint_contract, parameter_variants
from tests.api.openapi_check import OpenApiDocument
from tests.api.server import RunningApi

#: the spec's endpoint table ("Endpoints"), path templates as the contracts write them
SPEC_DATA_ENDPOINTS = {
    "/v1/search": "search",
    "/v1/resolve/{tickers}": "resolve",
    "/v1/prices/{tickers}": "prices",
    "/v1/prices": "prices",
    "/v1/fundamentals/{tickers}": "fundamentals",
    "/v1/fundamentals": "fundamentals",
    "/v1/metrics/{tickers}": "metrics",
    "/v1/insiders/{tickers}": "insiders",
    "/v1/holdings/{tickers}": "holdings",
    "/v1/managers": "managers",
    "/v1/managers/{manager_id}/holdings": "manager_holdings",
    "/v1/index/{index_name}": "index",
    "/v1/index/{index_name}/events": "index_events",
    "/v1/changes": "changes",
}
SERVICE_ENDPOINTS = {"/v1/status": "status", "/v1/auth/usage": "usage"}


def _normalised(path: str) -> str:
    """Path templates compared without their parameter names ({ticker} == {tickers})."""
    import re

    return re.sub(r"{\w+}", "{}", path)


def test_every_spec_endpoint_has_a_contract_and_a_route(api: RunningApi) -> None:
    # the served OpenAPI document lists the routes the app answers (FastAPI mounts included
    # routers lazily, so app.routes does not show them)
    with api.client() as client:
        routes = {_normalised(path) for path in client.get("/openapi.json").json()["paths"]}
    contract_paths = {
        _normalised(path): name
        for name in endpoint_names()
        for path in load_endpoint_contract(name).paths
    }
    for path, name in {**SPEC_DATA_ENDPOINTS, **SERVICE_ENDPOINTS}.items():
        assert contract_paths.get(_normalised(path)) == name, path
        assert _normalised(path) in routes, path
    for path, name in SERVICE_ENDPOINTS.items():
        assert load_endpoint_contract(name).kind == "service", path


def test_openapi_lists_every_parameter_with_its_allowed_values(api: RunningApi) -> None:
    with api.client() as client:
        document = client.get("/openapi.json").json()
        assert client.get("/docs").status_code == 200
    operations = {_normalised(p): ops["get"] for p, ops in document["paths"].items()}
    for name in endpoint_names():
        contract = load_endpoint_contract(name)
        for path in contract.paths:
            listed = {p["name"]: p for p in operations[_normalised(path)].get("parameters", [])}
            for parameter in contract.all_parameters:
                assert parameter.name in listed, (path, parameter.name)
                documented = listed[parameter.name]
                assert documented["description"]
                if parameter.values:
                    assert documented["schema"]["enum"] == parameter.values
                if parameter.type == "flag":
                    assert documented["schema"]["enum"] == ["true", "false"]


# the property test: random query strings on every generated path

# 410: /v1/changes with a `since` older than the 90 days the feed keeps
SPEC_STATUSES = {200, 400, 402, 404, 409, 410}
TEXT = st.text(alphabet=string.ascii_letters + string.digits + "-_.,:/ ", max_size=12)
VALUES = st.one_of(
    TEXT,
    st.sampled_from(["", "0", "1", "50.0", "-1", "true", "FALSE", "yes", "2025-03-31",
                     "2024-02-29", "2023-02-29", "0000-01-01", "9999-12-31", "2026-13-01",
                     "1mo", "split", "annual", "as_reported", "latest", "restated", "sp500"]),
    st.integers(min_value=-5, max_value=10**10).map(str),
    # past 64 bits, digits of other scripts, signs, a cursor past the newest change record
    st.integers(min_value=2**62, max_value=2**80).map(str),
    st.sampled_from(["9" * 5000, "9223372036854775807", "9223372036854775808", "+5", "٥",
                     "１０", "1e3", "0x10", "chg_999999999999", "chg_000000000000"]),
    st.dates().map(lambda d: d.isoformat()),
)  # fmt: skip

#: every kind of integer parameter in the contracts
INTEGER_TYPES = {"limit", "offset", "positive_int", "positive_ints"}
TOO_LARGE = ["9223372036854775808", str(2**64), "1" + "0" * 30, "9" * 5000]


def test_integers_past_64_bits_are_the_parameters_400(
    client: httpx.Client, paths: list[str]
) -> None:
    """One range check for every integer parameter: past a signed 64-bit integer is that
    parameter's 400 on every path that takes it (never a 500 from the database)."""
    checked = 0
    for path in paths:
        contract = next(
            load_endpoint_contract(n)
            for n in endpoint_names()
            if any(_matches(template, path) for template in load_endpoint_contract(n).paths)
        )
        for parameter in contract.all_parameters:
            if parameter.type not in INTEGER_TYPES or parameter.in_path:
                continue
            for value in TOO_LARGE:
                response = client.get(path, params={parameter.name: value})
                assert response.status_code in (400, 402), (path, parameter.name, response.text)
                checked += 1
    assert checked > 50
    for path in ("/v1/search", "/v1/index/sp500", "/v1/index/sp500/events"):
        largest = client.get(path, params={"offset": str(2**63 - 1)})
        assert largest.status_code == 200 and largest.json()["data"] == [], path


def _matches(template: str, path: str) -> bool:
    import re

    return re.fullmatch(re.sub(r"{\w+}", "[^/]+", template), path) is not None


def _parameter_names() -> list[str]:
    names = {p.name for n in endpoint_names() for p in load_endpoint_contract(n).all_parameters}
    return sorted(names | set(parameter_variants()) | {"zz", "cursor"})


@pytest.fixture(scope="module")
def client(api: RunningApi) -> Iterator[httpx.Client]:
    with api.client() as shared:
        shared.headers["X-API-Key"] = api.new_key("max").key
        yield shared


@pytest.fixture(scope="module")
def document(api: RunningApi) -> OpenApiDocument:
    with api.client() as served:
        return OpenApiDocument(served.get("/openapi.json").json())


@pytest.fixture(scope="module")
def paths(scenarios: dict[str, Any]) -> list[str]:
    fillers = {
        "ticker": [scenarios["plain"]["ticker"], scenarios["share_classes"]["shared_ticker"],
                   scenarios["ambiguous"]["ticker"], "ZZZQ"],
        "tickers": [scenarios["plain"]["ticker"], scenarios["ambiguous"]["ticker"], "ZZZQ",
                    f"{scenarios['plain']['ticker']},{scenarios['share_classes']['shared_ticker']}"],
        "index_name": ["sp500", "DJIA", "nasdaq"],
        "manager_id": [str(scenarios["managers"]["manager_id"]), "0", "x", "99999999"],
    }  # fmt: skip
    filled = []
    for name in endpoint_names():
        for path in load_endpoint_contract(name).paths:
            import re

            names = re.findall(r"{(\w+)}", path)
            if not names:
                filled.append(path)
                continue
            for value in fillers.get(names[0], ["x"]):
                filled.append(path.replace("{" + names[0] + "}", value))
    return filled


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_random_query_strings_never_500_or_422(
    client: httpx.Client, paths: list[str], document: OpenApiDocument, data: st.DataObject
) -> None:
    path = data.draw(st.sampled_from(paths))
    query = data.draw(
        st.dictionaries(st.sampled_from(_parameter_names()), VALUES, max_size=5), label="query"
    )
    response = client.get(path, params=query)
    assert response.status_code in SPEC_STATUSES, (path, query, response.text)
    document.check(response)  # the body and headers the OpenAPI document gives this answer
    body = response.json()
    if response.status_code != 200:
        assert body["status"] == response.status_code
        assert body["code"] and body["detail"]
    if response.status_code == 410:
        assert (path, body["code"]) == ("/v1/changes", "cursor_expired")
