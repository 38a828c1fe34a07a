"""The MCP server at /mcp over real HTTP (spec "MCP server"): the SDK's own client lists the
tools generated from the endpoint contracts and calls each one, and every answer is the REST
body of the same request; raw JSON-RPC POSTs for each refused key; a Free account's tool calls
and REST requests share one quota."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import httpx
import pytest
from mcp import ClientSession

from findata.contracts.endpoints import endpoint_names, load_endpoint_contract
from tests.api.endpoints.api_calls import get
from tests.api.mcp_sessions import BUDGET_META, call_tool, over_stdio, with_session
from tests.api.server import RunningApi


def without_budget(body: dict[str, Any]) -> dict[str, Any]:
    """A tool's result without what the result budget adds to ``meta`` (the rest is the REST
    body's)."""
    meta = {name: value for name, value in body["meta"].items() if name not in BUDGET_META}
    return {**body, "meta": meta}


def test_the_tools_are_the_endpoint_contracts(api: RunningApi, pro_key: str) -> None:
    listed = with_session(api, pro_key, lambda session: session.list_tools())
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == {f"get_{name}" for name in endpoint_names()}
    for name in endpoint_names():
        contract = load_endpoint_contract(name)
        tool = tools[f"get_{name}"]
        assert contract.summary in (tool.description or "")
        properties = tool.input_schema["properties"]
        for parameter in contract.all_parameters:
            if parameter.type == "key":
                assert parameter.name not in properties  # the key travels as on REST
            elif not parameter.in_path:
                assert properties[parameter.name]["description"].startswith(parameter.description)
                if parameter.values:
                    assert properties[parameter.name]["enum"] == parameter.values
    assert "ticker" in tools["get_prices"].input_schema["properties"]
    assert tools["get_index"].input_schema["required"] == ["index_name"]


def _same_requests(scenarios: dict[str, Any]) -> list[tuple[str, dict[str, Any], str, dict]]:
    """(tool, arguments, REST path, REST parameters) of one request on every endpoint (a
    ``limit`` where the result budget would cut the page: tests/api/test_mcp_results.py)."""
    plain = scenarios["plain"]["ticker"]
    as_of = scenarios["as_of"]
    return [
        ("get_prices", {"ticker": plain, "end": as_of, "limit": 5}, f"/v1/prices/{plain}",
         {"end": as_of, "limit": 5}),
        ("get_prices", {"entity_id": [scenarios["plain"]["entity_id"]], "limit": 3},
         "/v1/prices", {"entity_id": scenarios["plain"]["entity_id"], "limit": 3}),
        ("get_fundamentals", {"ticker": plain, "period": "annual"}, f"/v1/fundamentals/{plain}",
         {"period": "annual"}),
        ("get_metrics", {"ticker": plain, "fields": ["eps"]}, f"/v1/metrics/{plain}",
         {"fields": "eps"}),
        ("get_resolve", {"ticker": plain}, f"/v1/resolve/{plain}", {}),
        ("get_search", {"q": plain}, "/v1/search", {"q": plain}),
        ("get_insiders", {"ticker": scenarios["insiders"]["ticker"], "include_amendments": True,
                          "limit": 20},
         f"/v1/insiders/{scenarios['insiders']['ticker']}",
         {"include_amendments": "true", "limit": 20}),
        ("get_holdings", {"ticker": scenarios["holdings"]["ticker"], "limit": 10},
         f"/v1/holdings/{scenarios['holdings']['ticker']}", {"limit": 10}),
        ("get_managers", {"search": scenarios["managers"]["search"]}, "/v1/managers",
         {"search": scenarios["managers"]["search"]}),
        ("get_manager_holdings", {"manager_id": scenarios["managers"]["manager_id"], "limit": 20},
         f"/v1/managers/{scenarios['managers']['manager_id']}/holdings", {"limit": 20}),
        ("get_index", {"index_name": "sp500", "limit": 20}, "/v1/index/sp500", {"limit": 20}),
        ("get_index_events", {"index_name": "sp500"}, "/v1/index/sp500/events", {}),
        ("get_changes", {"since": scenarios["as_of"], "limit": 20}, "/v1/changes",
         {"since": as_of, "limit": 20}),
    ]  # fmt: skip


def test_every_tool_answers_with_the_rest_body(
    api: RunningApi, redistribution_key: str, scenarios: dict[str, Any]
) -> None:
    requests = _same_requests(scenarios)
    covered = {tool for tool, *_ in requests} | SERVICE_TOOLS
    assert covered == {f"get_{name}" for name in endpoint_names()}

    async def calls(session: ClientSession) -> list[Any]:
        return [await session.call_tool(tool, arguments) for tool, arguments, *_ in requests]

    results = with_session(api, redistribution_key, calls)
    for (tool, _arguments, path, params), result in zip(requests, results, strict=True):
        rest = get(api, redistribution_key, path, **params)
        assert rest.status_code == 200, (tool, rest.text)
        assert not result.is_error, (tool, result.content)
        assert not result.structured_content["meta"].get("cut_to_budget"), tool
        assert without_budget(result.structured_content) == rest.json(), tool
        assert result.content == [], tool  # the JSON once, as structured content


def test_a_cursor_pages_as_on_rest(
    api: RunningApi, redistribution_key: str, scenarios: dict[str, Any]
) -> None:
    plain = scenarios["plain"]["ticker"]
    first = call_tool(api, redistribution_key, "get_prices", {"ticker": plain, "limit": 2})
    cursor = first.structured_content["meta"]["next_cursor"]
    second = call_tool(
        api, redistribution_key, "get_prices", {"ticker": plain, "limit": 2, "cursor": cursor}
    )
    rest = get(api, redistribution_key, f"/v1/prices/{plain}", limit=2, cursor=cursor)
    assert second.structured_content == rest.json()
    assert (
        second.structured_content["data"][0]["date"] > first.structured_content["data"][-1]["date"]
    )


def test_a_refused_call_is_the_rest_error_body(
    api: RunningApi, free_key: str, pro_key: str, scenarios: dict[str, Any]
) -> None:
    ambiguous = scenarios["ambiguous"]
    cases = [
        (free_key, "get_insiders", {"ticker": scenarios["insiders"]["ticker"]},
         f"/v1/insiders/{scenarios['insiders']['ticker']}", {}),  # 402
        (pro_key, "get_prices", {"ticker": scenarios["plain"]["ticker"], "start": "2024-02-30"},
         f"/v1/prices/{scenarios['plain']['ticker']}", {"start": "2024-02-30"}),  # 400
        (pro_key, "get_index", {"index_name": "nikkei"}, "/v1/index/nikkei", {}),  # 400
        (pro_key, "get_resolve", {"ticker": "ZZZZZZ"}, "/v1/resolve/ZZZZZZ", {}),  # 404
        (pro_key, "get_prices", {"ticker": ambiguous["ticker"], "end": ambiguous["date"]},
         f"/v1/prices/{ambiguous['ticker']}", {"end": ambiguous["date"]}),  # 409
    ]  # fmt: skip
    for key, tool, arguments, path, params in cases:
        result = call_tool(api, key, tool, arguments)
        rest = get(api, key, path, **params)
        assert rest.status_code >= 400, (tool, arguments)
        assert result.is_error, (tool, arguments)
        assert result.content[0].text == rest.text, (tool, arguments)


def _rpc(
    api: RunningApi,
    body: dict[str, Any],
    headers: dict[str, str],
    accept: str = "application/json, text/event-stream",
) -> httpx.Response:
    with api.client() as client:
        return client.post("/mcp", json=body, headers={"Accept": accept, **headers})


def _tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def test_raw_tool_calls_answer_as_the_client_accepts(
    api: RunningApi, pro_key: str, scenarios: dict[str, Any]
) -> None:
    plain = scenarios["plain"]["ticker"]
    call = _tool_call("get_prices", {"ticker": plain, "limit": 2})
    rest = get(api, pro_key, f"/v1/prices/{plain}", limit=2)
    headers = {"X-API-Key": pro_key, "MCP-Protocol-Version": "2025-11-25"}
    as_json = _rpc(api, call, headers, accept="application/json")
    assert as_json.headers["content-type"].startswith("application/json")
    assert as_json.json()["result"]["structuredContent"] == rest.json()
    streamed = _rpc(api, call, headers)
    assert streamed.headers["content-type"].startswith("text/event-stream")
    (data,) = [line[5:] for line in streamed.text.splitlines() if line.startswith("data:")]
    assert json.loads(data)["result"]["structuredContent"] == rest.json()


def test_raw_plan_gate_and_quota_refusals(api: RunningApi, scenarios: dict[str, Any]) -> None:
    key = api.new_key("free").key
    insiders = scenarios["insiders"]["ticker"]
    gated = _rpc(
        api,
        _tool_call("get_insiders", {"ticker": insiders}),
        {"X-API-Key": key},
        "application/json",
    ).json()["result"]
    assert gated["isError"] is True
    assert (
        json.loads(gated["content"][0]["text"]) == get(api, key, f"/v1/insiders/{insiders}").json()
    )
    assert json.loads(gated["content"][0]["text"])["status"] == 402
    plain = scenarios["plain"]["ticker"]
    while get(api, key, f"/v1/prices/{plain}", limit=1).status_code == 200:
        pass  # the Free hour's 40 requests used up
    limited = _rpc(
        api, _tool_call("get_prices", {"ticker": plain}), {"X-API-Key": key}, "application/json"
    ).json()["result"]
    assert limited["isError"] is True
    refused = json.loads(limited["content"][0]["text"])
    assert (refused["status"], refused["code"]) == (429, "burst_limit_reached")
    assert refused == get(api, key, f"/v1/prices/{plain}", limit=1).json()


LIST_TOOLS = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}


def _rest_detail(api: RunningApi, headers: dict[str, str], scenarios: dict[str, Any]) -> str:
    with api.client() as client:
        refused = client.get(f"/v1/prices/{scenarios['plain']['ticker']}", headers=headers)
    assert refused.status_code in (401, 403)
    return refused.json()["detail"]


def test_refused_keys_get_json_rpc_errors(api: RunningApi, scenarios: dict[str, Any]) -> None:
    revoked = api.new_key("pro")
    api.store.revoke_key(revoked.key)
    disabled = api.new_key("pro")
    api.store.set_state(disabled.account.id, "disabled")
    refusals = {
        "missing": {},
        "incomplete": {"X-API-Key": "fdk_0123"},
        "authorization_not_bearer": {"Authorization": "Token abc"},
        "other_name": {"apikey": api.new_key("pro").key},
        "unrecognised": {"X-API-Key": "fdk_" + "0" * 32},
        "revoked": {"X-API-Key": revoked.key},
        "disabled": {"X-API-Key": disabled.key},
    }
    for cause, headers in refusals.items():
        answer = _rpc(api, LIST_TOOLS, headers)
        assert answer.status_code == 200, cause
        assert answer.json() == {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {"code": -32000, "message": _rest_detail(api, headers, scenarios)},
        }, cause
    without_id = _rpc(api, {"jsonrpc": "2.0", "method": "notifications/initialized"}, {})
    assert without_id.status_code == 200
    assert without_id.json() == {
        "jsonrpc": "2.0",
        "error": {"code": -32000, "message": _rest_detail(api, {}, scenarios)},
    }
    assert "X-API-Key" in without_id.json()["error"]["message"]  # where to pass the key


#: service endpoints (tested on their own below: a usage answer moves with every request)
SERVICE_TOOLS = {"get_status", "get_usage"}


def test_the_service_tools_answer_with_the_rest_body(
    api: RunningApi, scenarios: dict[str, Any]
) -> None:
    key = api.new_key("free").key
    plain = scenarios["plain"]["ticker"]
    assert get(api, key, f"/v1/prices/{plain}", limit=1).status_code == 200

    async def service_calls(session: ClientSession) -> list[Any]:
        return [await session.call_tool(tool, {}) for tool in sorted(SERVICE_TOOLS)]

    status, usage = with_session(api, key, service_calls)
    for tool, result, path in (("get_status", status, "/v1/status"),
                               ("get_usage", usage, "/v1/auth/usage")):  # fmt: skip
        rest = get(api, key, path)
        assert rest.status_code == 200 and not result.is_error, (tool, result.content)
        assert result.structured_content == rest.json(), tool
        assert result.content == [], tool
    # reading usage or status costs nothing, on either front end
    assert usage.structured_content["requests_today"] == 1
    assert usage.structured_content["plan"] == "free"
    assert status.structured_content["status"] == "ok"


def test_tool_calls_and_rest_requests_share_a_free_quota(
    api: RunningApi, scenarios: dict[str, Any]
) -> None:
    key = api.new_key("free").key
    plain = scenarios["plain"]["ticker"]
    arguments = {"ticker": plain, "limit": 1}

    async def twenty_calls(session: ClientSession) -> list[Any]:
        return [await session.call_tool("get_prices", arguments) for _ in range(20)]

    assert not any(result.is_error for result in with_session(api, key, twenty_calls))
    for _ in range(20):
        assert get(api, key, f"/v1/prices/{plain}", limit=1).status_code == 200
    usage = get(api, key, "/v1/auth/usage").json()
    assert usage["requests_today"] == 40
    refused = call_tool(api, key, "get_prices", arguments)  # Free: 40 requests an hour
    rest = get(api, key, f"/v1/prices/{plain}", limit=1)
    assert rest.status_code == 429
    assert refused.is_error and refused.content[0].text == rest.text
    assert get(api, key, "/v1/auth/usage").json()["requests_today"] == 40


@pytest.mark.parametrize("place", ["X-API-Key", "api_key", "Authorization"])
def test_the_key_is_read_in_the_three_places(api: RunningApi, pro_key: str, place: str) -> None:
    headers = {"X-API-Key": pro_key} if place == "X-API-Key" else {}
    if place == "Authorization":
        headers = {"Authorization": f"bearer {pro_key}"}
    url = f"/mcp?api_key={pro_key}" if place == "api_key" else "/mcp"
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    with api.client() as client:
        answer = client.post(
            url, json=init, headers={"Accept": "application/json, text/event-stream", **headers}
        )
    assert answer.status_code == 200
    assert '"serverInfo"' in answer.text and '"error"' not in answer.text


def test_the_stdio_command_proxies_to_the_service(
    api: RunningApi, pro_key: str, scenarios: dict[str, Any]
) -> None:
    plain = scenarios["plain"]["ticker"]

    async def use(session: ClientSession) -> tuple[Any, Any, Any]:
        listed = await session.list_tools()
        prices = await session.call_tool("get_prices", {"ticker": plain, "limit": 3})
        refused = await session.call_tool("get_index", {"index_name": "nikkei"})
        return listed, prices, refused

    listed, prices, refused = over_stdio(api, pro_key, use)
    assert {tool.name for tool in listed.tools} == {f"get_{name}" for name in endpoint_names()}
    assert prices.structured_content == get(api, pro_key, f"/v1/prices/{plain}", limit=3).json()
    assert refused.is_error
    assert refused.content[0].text == get(api, pro_key, "/v1/index/nikkei").text


def test_a_body_past_the_sdk_limit_is_refused(api: RunningApi, pro_key: str) -> None:
    with api.client() as client:
        answer = client.post(
            "/mcp",
            content=b"x" * (4 * 1024 * 1024 + 1),
            headers={"X-API-Key": pro_key, "Content-Type": "application/json"},
        )
    assert answer.status_code == 413
    assert answer.json()["error"] == {"code": -32600, "message": "Request body too large"}


def test_get_index_keeps_free_s_as_of_allowance_and_no_paid_plan_has_one(
    api: RunningApi, scenarios: dict[str, Any]
) -> None:
    code = scenarios["index_events"]["index"]
    days = [(dt.date(2024, 1, 1) + dt.timedelta(days=n)).isoformat() for n in range(55)]
    free = api.new_key("free")
    # the day's 51 dates already used
    api.counters.add_distinct(free.account.id, api.clock.now().date(), "as_of", days[:51])
    refused = call_tool(api, free.key, "get_index", {"index_name": code, "as_of": days[0]})
    rest = get(api, free.key, f"/v1/index/{code}", as_of=days[0])
    assert rest.status_code == 429 and rest.json()["code"] == "asof_limit_exceeded"
    assert refused.is_error and refused.content[0].text == rest.text

    async def many_dates(session: ClientSession) -> list[Any]:
        arguments = [{"index_name": code, "as_of": day, "limit": 1} for day in days]
        return [await session.call_tool("get_index", each) for each in arguments]

    paid = api.new_key("pro").key
    assert not any(result.is_error for result in with_session(api, paid, many_dates))


def test_an_unknown_tool_is_a_protocol_error(api: RunningApi, pro_key: str) -> None:
    answer = _rpc(api, _tool_call("get_quotes", {}), {"X-API-Key": pro_key}, "application/json")
    assert answer.json()["error"]["code"] == -32602
    assert answer.json()["error"]["message"] == "Unknown tool: get_quotes"
