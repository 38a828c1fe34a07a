"""MCP sessions for the tests: the official SDK's clients on the server's ``/mcp`` over real
HTTP, and on ``findata mcp`` launched over stdio as a desktop client launches it."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.api.server import RunningApi

#: what the MCP result budget adds to a result's ``meta`` (docs/serving.md, "MCP")
BUDGET_META = {"budget_bytes", "cut_to_budget", "next_offset", "narrow"}

ToolCall = Callable[[ClientSession], Awaitable[Any]]
ClientUse = Callable[[Client], Awaitable[Any]]


def with_session(api: RunningApi, key: str, use: ToolCall) -> Any:
    """Run ``use`` in an initialised SDK client session on the server's /mcp, with ``key``
    (the ``initialize`` handshake, protocol 2025-11-25)."""

    async def run() -> Any:
        async with (
            httpx2.AsyncClient(headers={"X-API-Key": key}, timeout=30) as http,
            streamable_http_client(f"{api.url}/mcp", http_client=http) as (read, write, *_),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await use(session)

    return anyio.run(run)


def with_client(api: RunningApi, key: str, use: ClientUse) -> Any:
    """Run ``use`` with the SDK's ``Client`` on the server's /mcp, with ``key`` (it negotiates
    as it does by default: ``server/discover``, protocol 2026-07-28)."""

    async def run() -> Any:
        async with (
            httpx2.AsyncClient(headers={"X-API-Key": key}, timeout=30) as http,
            Client(streamable_http_client(f"{api.url}/mcp", http_client=http)) as client,
        ):
            return await use(client)

    return anyio.run(run)


def call_tool(api: RunningApi, key: str, name: str, arguments: dict[str, Any]) -> Any:
    """One tool call's result."""
    return with_session(api, key, lambda session: session.call_tool(name, arguments))


def stdio_command(api: RunningApi, env: dict[str, str]) -> StdioServerParameters:
    """``findata mcp --url <api>`` with ``env``, as a desktop client launches it."""
    return StdioServerParameters(
        command=str(Path(sys.executable).parent / "findata"),
        args=["mcp", "--url", api.url],
        env=env,
    )


def over_stdio(api: RunningApi, key: str, use: ToolCall) -> Any:
    """Run ``use`` in an initialised SDK session with ``findata mcp --url <api>`` over stdio."""

    async def run() -> Any:
        async with (
            stdio_client(stdio_command(api, {"FINDATA_API_KEY": key})) as (read, write, *_),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await use(session)

    return anyio.run(run)
