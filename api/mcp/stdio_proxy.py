"""``findata mcp --url URL``: the MCP server of a findata service, over stdio, for desktop
clients that launch a local command (Claude Desktop, Cursor...).

A proxy, not a second server: every ``tools/list`` and ``tools/call`` is forwarded to
``URL/mcp`` with the key from ``FINDATA_API_KEY`` (sent in ``X-API-Key``), and the service's
answer (a tool result, or its JSON-RPC error for a refused key) is handed back, so the tools,
their validation, plan gates and quotas are the service's own. The key is checked when the
client opens the connection (``initialize``, or ``server/discover`` on 2026-07-28), as over
HTTP: a refused key, or none set, fails the opening request with a JSON-RPC error the client
shows, instead of a connection that closes or works until the first call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Any, TypeVar

import anyio.lowlevel
import httpx2
import mcp_types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from findata.api.mcp.results import as_read_by
from findata.api.mcp.server import INSTRUCTIONS, KEY_REFUSED

Answer = TypeVar("Answer")

#: the requests that open a connection: where the key is checked
OPENING_METHODS = frozenset({"initialize", "server/discover"})
#: the environment variable the key is read from (the command line's ``findata mcp``)
KEY_VARIABLE = "FINDATA_API_KEY"
NO_KEY = (
    f"No API key: `findata mcp` sends the key in {KEY_VARIABLE}, which is not set. Set it to "
    "your key in this server's environment (the `env` of its entry in the MCP client's "
    "configuration), then restart the server."
)


@asynccontextmanager
async def _service(url: str, key: str) -> AsyncIterator[ClientSession]:
    """An initialised session with the service's ``/mcp``."""
    async with (
        httpx2.AsyncClient(headers={"X-API-Key": key}, timeout=60) as http,
        streamable_http_client(f"{url.rstrip('/')}/mcp", http_client=http) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def proxy_server(url: str, key: str) -> Server[Any]:
    """A stdio-side server whose tools are the service's."""

    async def forwarded(ask: Callable[[ClientSession], Awaitable[Answer]]) -> Answer:
        # one service session per call: the service is stateless, and a long-lived desktop
        # client must survive the service restarting between calls
        if not key:
            raise MCPError(code=KEY_REFUSED, message=NO_KEY)
        try:
            async with _service(url, key) as session:
                return await ask(session)
        except BaseExceptionGroup as group:  # the transport's task groups wrap the refusal
            refusal = _service_error(group)
            if refusal is None:
                raise
            raise refusal from None

    async def key_checked_at_opening(
        ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.method in OPENING_METHODS:
            # the service's own initialize checks the key (nothing else is asked of it)
            await forwarded(lambda _session: anyio.lowlevel.checkpoint())
        return await call_next(ctx)

    async def list_tools(
        _ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return await forwarded(lambda session: session.list_tools(params=params))

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        result = await forwarded(lambda session: session.call_tool(params.name, params.arguments))
        return as_read_by(result, ctx.protocol_version)

    server: Server[Any] = Server(
        "findata",
        version=version("findata"),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    server.middleware.append(key_checked_at_opening)
    return server


def _service_error(error: BaseException) -> MCPError | None:
    """The service's JSON-RPC error (a refused key) inside nested exception groups."""
    if isinstance(error, MCPError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = _service_error(inner)
            if found is not None:
                return found
    return None


async def serve_stdio(url: str, key: str) -> None:
    """Serve the proxy on this process's stdin and stdout until the client closes them."""
    server = proxy_server(url, key)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
