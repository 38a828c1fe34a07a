"""MCP tool results an agent can hold, and tools that say what they are (issue 42, points 9
and 10), over real HTTP with the official SDK's clients: a result without ``limit`` fits the
result budget with ``warnings`` and ``meta`` first, is sent once, and pages honestly (following
its continuation fetches every row exactly once, and the quota counts the rows sent); every tool
has an output schema its real results validate against, read-only annotations, and the server
names itself and says how results read at ``initialize``."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client, ClientSession

from findata.api.app import create_app
from findata.api.responses import json_bytes
from findata.change_cursor import decode_change_cursor, encode_change_cursor
from findata.contracts.endpoints import endpoint_names, load_endpoint_contract
from findata.settings import Settings
from tests.api.endpoints.api_calls import get
from tests.api.mcp_sessions import BUDGET_META, with_client, with_session
from tests.api.server import RunningApi, serve, start_clock

#: the result budget a server has when nothing sets it (docs/operating.md: FINDATA_MCP_RESULT_BYTES)
RESULT_BUDGET_BYTES = 32_768
#: a budget the small demo's rosters and feeds overflow, for following every kind of paging
SMALL_BUDGET = 4096


@pytest.fixture(scope="module")
def small_budget_api(published_home: Path) -> Iterator[RunningApi]:
    """The API on the published demo with a small MCP result budget."""
    clock = start_clock()
    settings = Settings(home=published_home, mcp_result_bytes=SMALL_BUDGET)
    with serve(create_app(settings, clock), clock) as running:
        yield running


def test_a_default_get_prices_result_fits_the_budget_warnings_first(
    api: RunningApi, pro_key: str, scenarios: dict[str, Any]
) -> None:
    plain = scenarios["plain"]["ticker"]

    async def session(client: Client) -> tuple[Any, Any]:
        listed = await client.list_tools()
        # a misspelt argument: its warning must come before the rows
        prices = await client.call_tool("get_prices", {"ticker": plain, "symbol": plain})
        return listed, prices

    listed, prices = with_client(api, pro_key, session)
    tool = {tool.name: tool for tool in listed.tools}["get_prices"]
    assert tool.output_schema is not None and tool.annotations is not None
    assert tool.annotations.read_only_hint is True
    assert not prices.is_error
    body = prices.structured_content
    assert len(json_bytes(body)) <= RESULT_BUDGET_BYTES
    assert list(body) == ["warnings", "meta", "data"]
    assert body["warnings"] == ["Unknown parameter ignored: 'symbol'. Did you mean 'ticker'?"]
    meta = body["meta"]
    assert meta["budget_bytes"] == RESULT_BUDGET_BYTES and meta["cut_to_budget"] is True
    assert meta["has_more"] is True and meta["next_cursor"]
    assert "cursor=meta.next_cursor" in meta["narrow"] and "fields" in meta["narrow"]
    assert 0 < meta["count"] == len(body["data"]) < 1000  # the page was 1,000 rows
    assert prices.content == []  # the JSON once: as structured content


def _continue(body: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The arguments of the next call, from a result's ``meta`` (None on the last page)."""
    meta = body["meta"]
    if "next_offset" in meta:
        return {**arguments, "offset": meta["next_offset"]}
    if not meta["has_more"]:
        return None
    if "since" in arguments:
        return {**arguments, "since": meta["next_cursor"]}
    return {**arguments, "cursor": meta["next_cursor"]}


def _every_page(
    api: RunningApi, key: str, tool: str, arguments: dict[str, Any]
) -> list[dict[str, Any]]:
    """Each result of a call and the calls its continuations lead to."""

    async def pages(session: ClientSession) -> list[dict[str, Any]]:
        bodies: list[dict[str, Any]] = []
        asked: dict[str, Any] | None = arguments
        while asked is not None and len(bodies) < 100:
            result = await session.call_tool(tool, asked)
            assert not result.is_error, result.content
            bodies.append(result.structured_content)
            asked = _continue(bodies[-1], asked)
        return bodies

    return with_session(api, key, pages)


@pytest.mark.parametrize("paging", ["cursor", "offset", "row cursor"])
def test_following_the_continuation_fetches_every_row_once(
    small_budget_api: RunningApi, scenarios: dict[str, Any], paging: str
) -> None:
    api = small_budget_api
    key = api.new_key("redistribution").key
    plain = scenarios["plain"]["ticker"]
    as_of = dt.date.fromisoformat(scenarios["as_of"])
    quarter = {"start": (as_of - dt.timedelta(days=91)).isoformat(), "end": as_of.isoformat()}
    latest = get(api, key, "/v1/changes", limit=1).json()["meta"]["latest_cursor"]
    recent = encode_change_cursor(max((decode_change_cursor(latest) or 0) - 60, 0))
    tool, arguments, path, everything = {
        "cursor": ("get_prices", {"ticker": plain, **quarter}, f"/v1/prices/{plain}",
                   {**quarter, "limit": 5000}),
        "offset": ("get_index_events", {"index_name": "sp500"}, "/v1/index/sp500/events",
                   {"limit": 1000}),
        "row cursor": ("get_changes", {"since": recent}, "/v1/changes",
                       {"since": recent, "limit": 5000}),
    }[paging]  # fmt: skip
    bodies = _every_page(api, key, tool, arguments)
    rest = get(api, key, path, **everything).json()
    assert not rest["meta"]["has_more"]
    assert len(bodies) > 2  # cut more than once
    assert [row for body in bodies for row in body["data"]] == rest["data"]
    for body in bodies:
        assert len(json_bytes(body)) <= SMALL_BUDGET
        assert body["meta"]["budget_bytes"] == SMALL_BUDGET
    assert all(body["meta"]["cut_to_budget"] for body in bodies[:-1])
    assert "narrow" not in bodies[-1]["meta"]


def test_fields_fit_more_rows_limit_sets_the_page_and_the_quota_counts_rows_sent(
    api: RunningApi, scenarios: dict[str, Any]
) -> None:
    key = api.new_key("pro").key
    plain = scenarios["plain"]["ticker"]

    async def calls(session: ClientSession) -> list[Any]:
        return [
            await session.call_tool("get_prices", {"ticker": plain}),
            await session.call_tool("get_prices", {"ticker": plain, "fields": ["close"]}),
            await session.call_tool("get_prices", {"ticker": plain, "limit": 300}),
        ]

    every_field, close_only, limited = (
        result.structured_content for result in with_session(api, key, calls)
    )
    assert len(close_only["data"]) > len(every_field["data"])
    assert len(json_bytes(close_only)) <= RESULT_BUDGET_BYTES
    assert len(limited["data"]) == 300  # a limit is the page size, whatever its bytes
    assert not set(BUDGET_META) & set(limited["meta"])
    sent = sum(len(body["data"]) for body in (every_field, close_only, limited))
    assert get(api, key, "/v1/auth/usage").json()["rows_today"] == sent
    # the answer cut for the tool is not the REST answer to the same request
    assert len(get(api, key, f"/v1/prices/{plain}").json()["data"]) == 1000


def _one_call_per_tool(scenarios: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Arguments of one call to every tool (no ``limit``: the budget applies)."""
    plain = scenarios["plain"]["ticker"]
    return {
        "get_prices": {"ticker": plain},
        "get_fundamentals": {"ticker": plain},
        "get_metrics": {"ticker": plain},
        "get_resolve": {"ticker": plain},
        "get_search": {"q": plain[:2]},
        "get_insiders": {"ticker": scenarios["insiders"]["ticker"]},
        "get_holdings": {"ticker": scenarios["holdings"]["ticker"]},
        "get_managers": {"search": scenarios["managers"]["search"]},
        "get_manager_holdings": {"manager_id": scenarios["managers"]["manager_id"]},
        "get_index": {"index_name": "sp500"},
        "get_index_events": {"index_name": "sp500"},
        "get_changes": {},
        "get_status": {},
        "get_usage": {},
    }


def test_every_tool_result_validates_against_its_output_schema(
    api: RunningApi, redistribution_key: str, scenarios: dict[str, Any]
) -> None:
    calls = _one_call_per_tool(scenarios)
    assert set(calls) == {f"get_{name}" for name in endpoint_names()}

    async def every_tool(session: ClientSession) -> tuple[Any, dict[str, Any]]:
        listed = await session.list_tools()
        return listed, {tool: await session.call_tool(tool, calls[tool]) for tool in calls}

    listed, results = with_session(api, redistribution_key, every_tool)
    schemas = {tool.name: tool.output_schema for tool in listed.tools}
    for tool, result in results.items():
        assert not result.is_error, (tool, result.content)
        schema = schemas[tool]
        assert schema is not None and schema["type"] == "object", tool
        jsonschema.Draft202012Validator.check_schema(schema)
        jsonschema.Draft202012Validator(schema).validate(result.structured_content)
        assert len(json_bytes(result.structured_content)) <= RESULT_BUDGET_BYTES, tool


#: keywords some model APIs refuse at the root of a tool's input schema
ROOT_COMPOSITION = {"anyOf", "oneOf", "allOf", "not", "if", "then", "else"}


def _descriptions(schema: dict[str, Any]) -> list[str]:
    """Every description in an input schema."""
    found = [schema["description"]] if "description" in schema else []
    for value in schema.get("properties", {}).values():
        found += _descriptions(value)
    return found


def test_tools_are_read_only_and_say_what_they_need(api: RunningApi, pro_key: str) -> None:
    listed = with_session(api, pro_key, lambda session: session.list_tools())
    tools = {tool.name: tool for tool in listed.tools}
    for name in endpoint_names():
        contract = load_endpoint_contract(name)
        tool = tools[f"get_{name}"]
        assert tool.title == contract.summary
        annotations = tool.annotations
        assert annotations is not None
        assert (annotations.read_only_hint, annotations.destructive_hint) == (True, False)
        assert (annotations.idempotent_hint, annotations.open_world_hint) == (True, False)
        texts = [tool.description or "", *_descriptions(tool.input_schema)]
        assert not [text for text in texts if "path" in text], tool.name
        assert not ROOT_COMPOSITION & set(tool.input_schema), tool.name
        subject = contract.subject
        if subject and subject.path_parameter and subject.entity_id_parameter:
            required = "Give `ticker` or `entity_id`: one of them is required"
            assert required in (tool.description or ""), tool.name
    assert tools["get_index"].input_schema["required"] == ["index_name"]
    assert tools["get_manager_holdings"].input_schema["required"] == ["manager_id"]
    assert tools["get_resolve"].input_schema["required"] == ["ticker"]


def test_initialize_names_the_server_and_says_how_results_read(
    api: RunningApi, pro_key: str
) -> None:
    opened = with_session(api, pro_key, lambda session: session.initialize())
    assert opened.server_info.name == "findata"
    assert opened.server_info.version == version("findata")
    instructions = opened.instructions or ""
    assert "meta.budget_bytes" in instructions and "meta.next_cursor" in instructions


def _raw_call(api: RunningApi, key: str, revision: str | None, arguments: dict[str, Any]) -> dict:
    """A ``tools/call`` of get_prices POSTed as a client of ``revision`` sends it (none: a
    client from before the header)."""
    call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": "get_prices", "arguments": arguments}}  # fmt: skip
    headers = {"X-API-Key": key, "Accept": "application/json"}
    if revision is not None:
        headers["MCP-Protocol-Version"] = revision
    with api.client() as client:
        return client.post("/mcp", json=call, headers=headers).json()["result"]


def test_a_result_is_sent_once_in_the_form_the_client_reads(
    api: RunningApi, pro_key: str, scenarios: dict[str, Any]
) -> None:
    arguments = {"ticker": scenarios["plain"]["ticker"], "limit": 20}
    structured = _raw_call(api, pro_key, "2025-11-25", arguments)
    assert structured["content"] == [] and structured["structuredContent"]["data"]
    for earlier in (None, "2025-03-26"):  # no structuredContent before 2025-06-18
        as_text = _raw_call(api, pro_key, earlier, arguments)
        assert "structuredContent" not in as_text
        (block,) = as_text["content"]
        assert json.loads(block["text"]) == structured["structuredContent"]
