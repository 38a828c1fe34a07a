"""The MCP transport's edges (issue 42, point 11), over real HTTP and a real ``findata mcp``
process: ``/mcp`` answers POST only, so a GET gets its 405 at once instead of an event stream
that never carries anything, and every refused method names POST; over stdio a refused key
fails ``initialize`` as it does over HTTP, and a missing key is an MCP error that says what to
set, not a connection that closes."""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from tests.api.mcp_sessions import over_stdio, stdio_command
from tests.api.server import RunningApi

#: a bound on waiting for an answer, so a test fails instead of hanging (not a timing check)
ANSWER_BOUND_SECONDS = 20


def test_a_get_is_refused_at_once_naming_post(api: RunningApi, pro_key: str) -> None:
    headers = {"X-API-Key": pro_key, "Accept": "text/event-stream"}
    with api.client() as client, client.stream("GET", "/mcp", headers=headers) as answer:
        assert answer.status_code == 405
        assert answer.headers["allow"] == "POST"
        assert not answer.headers["content-type"].startswith("text/event-stream")
        body = answer.read()  # the body ends: no stream held open
    assert b'"code":-32600' in body and b"POST" in body


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"])
def test_every_other_method_is_refused_naming_post(
    api: RunningApi, pro_key: str, method: str
) -> None:
    with api.client() as client:
        answer = client.request(method, "/mcp", headers={"X-API-Key": pro_key})
    assert answer.status_code == 405
    assert answer.headers["allow"] == "POST"
    if method != "HEAD":
        error = answer.json()["error"]
        assert error["code"] == -32600 and "accepts POST only" in error["message"]


def _opening(api: RunningApi, env: dict[str, str]) -> Any:
    """What ``initialize`` with ``findata mcp`` over stdio gives: its result, or its error."""

    async def run() -> Any:
        with anyio.fail_after(ANSWER_BOUND_SECONDS):
            async with (
                stdio_client(stdio_command(api, env)) as (read, write, *_),
                ClientSession(read, write) as session,
            ):
                try:
                    return await session.initialize()
                except MCPError as refused:
                    return refused

    return anyio.run(run)


def test_over_stdio_a_refused_key_fails_initialize(api: RunningApi) -> None:
    revoked = api.new_key("pro")
    api.store.revoke_key(revoked.key)
    refused = _opening(api, {"FINDATA_API_KEY": revoked.key})
    assert isinstance(refused, MCPError)
    with api.client() as client:
        rest = client.get("/v1/auth/usage", headers={"X-API-Key": revoked.key})
    assert rest.status_code == 401
    assert (refused.error.code, refused.error.message) == (-32000, rest.json()["detail"])


def test_over_stdio_a_missing_key_is_an_mcp_error(api: RunningApi) -> None:
    refused = _opening(api, {})
    assert isinstance(refused, MCPError)
    assert refused.error.code == -32000
    assert "FINDATA_API_KEY" in refused.error.message and "not set" in refused.error.message


def test_over_stdio_initialize_names_the_server(api: RunningApi, pro_key: str) -> None:
    opened = _opening(api, {"FINDATA_API_KEY": pro_key})
    assert not isinstance(opened, MCPError), opened
    assert (opened.server_info.name, opened.server_info.version) == ("findata", version("findata"))
    assert "meta.next_cursor" in (opened.instructions or "")
    # and the tools are the service's, called through the proxy
    listed = over_stdio(api, pro_key, lambda session: session.list_tools())
    assert all(tool.output_schema for tool in listed.tools)
