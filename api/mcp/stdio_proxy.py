"""``findata mcp --url URL``: the MCP server of a findata service, over stdio, for desktop
clients that launch a local command (Claude Desktop, Cursor...).

A proxy, not a second server: every ``tools/list`` and ``tools/call`` is forwarded to
``URL/mcp`` with the key from ``FINDATA_API_KEY`` (sent in ``X-API-Key``), and the service's
answer (a tool result, or its JSON-RPC error for a refused key) is handed back unchanged, so the
tools, their validation, plan gates and quotas are the service's own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import httpx2
import mcp_types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

Answer = TypeVar("Answer")


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
        try:
            async with _service(url, key) as session:
                return await ask(session)
        except BaseExceptionGroup as group:  # the transport's task groups wrap the refusal
            refusal = _service_error(group)
            if refusal is None:
                raise
            raise refusal from None

    async def list_tools(
        _ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return await forwarded(lambda session: session.list_tools(params=params))

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await forwarded(lambda session: session.call_tool(params.name, params.arguments))

    return Server("findata", on_list_tools=list_tools, on_call_tool=call_tool)


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
