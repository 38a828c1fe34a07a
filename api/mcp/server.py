"""The MCP server at ``/mcp`` (spec: "MCP server"): the official SDK's low-level ``Server`` over
the streamable HTTP transport, stateless (each POST answered on its own, so any API worker can
answer any call), with one tool per endpoint contract (``api/mcp/tools.py``).

A client that accepts an event stream gets one; a client that accepts only JSON gets plain JSON
(two SDK transports, one per answer form). The key is read and checked before the SDK sees the
request, by the REST API's own rules (``api/auth.py``): a refused key is an HTTP 200 with a
JSON-RPC error, code -32000, whose message is the REST API's ``detail`` for that cause. A tool
call runs ``answer_request``, the REST route's steps, so it is validated, gated, counted and
paged exactly as the REST request, then held to the result budget (``api/mcp/budget.py``) and
sent once (``api/mcp/results.py``).

The endpoint answers POST only: stateless, it sends no server-initiated messages, so a GET
stream would stay open with nothing on it, and it keeps no sessions for a DELETE to end; any
other method is answered 405 with ``Allow: POST`` before the key is read (the MCP
specification's answer to GET and DELETE on such a server).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Any

import anyio.to_thread
import mcp_types as types
import orjson
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, INVALID_REQUEST
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from findata.accounts.store import AccountStore, KeyOwner
from findata.api.auth import authenticate, read_key
from findata.api.data_requests import DataRequest, Serving
from findata.api.errors import ApiError, InternalError
from findata.api.mcp.budget import budget_for
from findata.api.mcp.results import error_result, leading, tool_result
from findata.api.mcp.tools import tool_contracts, tool_definition, tool_request
from findata.api.responses import json_bytes
from findata.api.service_requests import answer_request

log = logging.getLogger("findata.api")

MCP_PATH = "/mcp"
#: JSON-RPC's code for a refused key (spec)
KEY_REFUSED = -32000
#: where the key check leaves the checked key (its owner, the newest version read with it) for
#: the tool handler
KEY_STATE = "findata_key"
#: the one HTTP method of the endpoint
ALLOWED = "POST"
#: what a client learns at ``initialize`` (or ``server/discover``)
INSTRUCTIONS = (
    "Read-only tools over findata's point-in-time financial data, one per endpoint of the "
    "findata API (each tool's description says what it serves). A result is JSON with "
    "`warnings` and `meta` first and the rows in `data`. Without `limit`, a result is cut to "
    "`meta.budget_bytes`: `meta.cut_to_budget` says when rows were cut, `meta.next_cursor` (or "
    "`meta.next_offset`) continues exactly there, and `meta.narrow` says how to ask for less. "
    "A ticker naming several securities is refused with its candidates: call again with "
    "`entity_id`. get_status tells how fresh the data is; get_usage, what your key has used."
)


def mcp_server(serving: Serving, budget: int) -> Server[Any]:
    """The SDK server: tools listed and called from the endpoint contracts, their results held
    to ``budget`` bytes."""
    contracts = tool_contracts()
    tools = [tool_definition(contract, budget) for contract in contracts.values()]

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        contract = contracts.get(params.name)
        if contract is None:  # the MCP specification's protocol error for an unknown tool
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        request: Request = ctx.request
        arguments = params.arguments or {}
        asked = tool_request(contract, arguments)
        data_request = DataRequest(
            contract=contract,
            path=asked.path,
            url_path=asked.url_path,
            path_values=asked.path_values,
            sent=asked.sent,
            owner=request.scope["state"][KEY_STATE].owner,
            client_ip=request.client.host if request.client else "unknown",
            user_agent=request.headers.get("user-agent"),
            fit=budget_for(contract, arguments, budget),
            newest_version_id=request.scope["state"][KEY_STATE].newest_version_id,
        )
        try:
            answer = await anyio.to_thread.run_sync(answer_request, serving, data_request)
        except ApiError as error:
            return error_result(error)
        except Exception:
            # as on REST: the traceback to the log, the spec's 500 body to the client
            log.exception("unhandled error in MCP tool %s", params.name)
            return error_result(InternalError())
        return tool_result(leading(orjson.loads(answer.body)), ctx.protocol_version)

    return Server(
        "findata",
        version=version("findata"),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


class McpEndpoint:
    """The ASGI endpoint of ``/mcp``: the key check, then the SDK's streamable HTTP transport."""

    def __init__(self, serving: Serving, accounts: AccountStore, result_budget: int) -> None:
        self._accounts = accounts
        server = mcp_server(serving, result_budget)
        # keys guard every call, and the service answers on its public host names, so the SDK's
        # DNS-rebinding guard for unauthenticated local servers is off
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        # an answer as an event stream, or as plain JSON for a client that accepts only JSON
        self.streamed, self.plain = (
            StreamableHTTPSessionManager(
                app=server, stateless=True, json_response=as_json, security_settings=security
            )
            for as_json in (False, True)
        )

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The transports' task groups, for the app's lifespan."""
        async with self.streamed.run(), self.plain.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        if request.method != ALLOWED:
            await _method_not_allowed(request.method)(scope, receive, send)
            return
        body = await _read_body(request)
        if body is None:
            await _too_large()(scope, receive, send)
            return
        try:
            reading = read_key(request.headers, request.query_params)
            checked = await anyio.to_thread.run_sync(
                authenticate, reading, self._accounts, "required"
            )
        except ApiError as refused:
            await _key_refused(body, refused)(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        state[KEY_STATE] = checked
        # the request's log line names the account, as a REST request's does (api/deps.py)
        state["account_id"] = _owner(checked.owner).account.id
        accepted = request.headers.get("accept", "")
        streams = "text/event-stream" in accepted or "*/*" in accepted or not accepted
        sessions = self.streamed if streams else self.plain
        await sessions.handle_request(scope, _replay(body, receive), send)


async def _read_body(request: Request) -> bytes | None:
    """The request's body, or None past the SDK's own size limit (read before the SDK, so the
    key check cannot be made to buffer more than the SDK would)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > DEFAULT_MAX_REQUEST_BODY_SIZE:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large() -> Response:
    error = {"code": INVALID_REQUEST, "message": "Request body too large"}
    return Response(
        json_bytes({"jsonrpc": "2.0", "id": None, "error": error}),
        status_code=413,
        media_type="application/json",
    )


def _method_not_allowed(method: str) -> Response:
    """405 naming the one method: a JSON-RPC error with no ``id`` (no message was read)."""
    message = (
        f"Method Not Allowed: {MCP_PATH} accepts {ALLOWED} only, one JSON-RPC message a "
        "request; this server sends no messages of its own and keeps no sessions."
    )
    error = {"code": INVALID_REQUEST, "message": message}
    return Response(
        json_bytes({"jsonrpc": "2.0", "error": error}) if method != "HEAD" else b"",
        status_code=405,
        media_type="application/json",
        headers={"Allow": ALLOWED},
    )


def _owner(owner: KeyOwner | None) -> KeyOwner:
    assert owner is not None  # keys are required on /mcp
    return owner


def _key_refused(body: bytes, refused: ApiError) -> Response:
    """HTTP 200 with a JSON-RPC error: code -32000, the REST detail as the message; ``id`` as
    the request's, left out when it has none."""
    answer: dict[str, Any] = {"jsonrpc": "2.0"}
    try:
        message = orjson.loads(body)
    except ValueError:
        message = None
    if isinstance(message, dict) and "id" in message:
        answer["id"] = message["id"]
    answer["error"] = {"code": KEY_REFUSED, "message": refused.detail}
    return Response(json_bytes(answer), media_type="application/json")


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the already read body to the SDK, then waits on the client as
    the original does (for its disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
