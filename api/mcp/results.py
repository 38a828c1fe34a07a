"""What a tool call returns: its JSON once, in the form the client's protocol revision reads.

The MCP specification gives structured results to ``structuredContent`` (checked against the
tool's ``outputSchema``) and asks a tool that returns one to "also return the serialized JSON in
a TextContent block" for backwards compatibility: for clients that predate structured content.
Sending both to every client sends each result twice. Each request says which revision its
client speaks (``MCP-Protocol-Version`` over HTTP, the handshake over stdio), so the result is
sent once: as ``structuredContent`` to a client on 2025-06-18 (the revision that brought it) or
later, as that JSON in a text block to an older one. A refused call is the REST error body as
text, ``isError`` true, on every revision.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp_types.version import is_version_at_least

from findata.api.errors import ApiError
from findata.api.mcp.tools import TICKER_ARGUMENT
from findata.api.params import PATH_TICKER
from findata.api.responses import json_bytes

#: the first protocol revision with ``structuredContent`` and ``outputSchema``
STRUCTURED_SINCE = "2025-06-18"


def tool_result(body: dict[str, Any], protocol_version: str) -> types.CallToolResult:
    """A successful call's result: ``body`` once, as the client's revision reads results."""
    if is_version_at_least(protocol_version, STRUCTURED_SINCE):
        return types.CallToolResult(content=[], structured_content=body)
    return types.CallToolResult(content=[types.TextContent(text=json_bytes(body).decode())])


def as_read_by(result: types.CallToolResult, protocol_version: str) -> types.CallToolResult:
    """A result received in structured form (the stdio proxy's, from the service), in the form
    the client's revision reads."""
    if result.is_error or result.structured_content is None:
        return result
    return tool_result(result.structured_content, protocol_version)


def error_result(error: ApiError) -> types.CallToolResult:
    """A refused call: the REST error body as text, ``isError`` true."""
    return types.CallToolResult(
        content=[types.TextContent(text=json_bytes(error.body()).decode())], is_error=True
    )


def leading(body: dict[str, Any]) -> dict[str, Any]:
    """The body as an agent reads it, top down: ``warnings`` and ``meta`` first, the rows last;
    a warning that suggests the REST path's ticker names the tool's argument instead."""
    first = {name: body[name] for name in ("warnings", "meta") if name in body}
    if "warnings" in first:
        hint = f"Did you mean {PATH_TICKER}?"
        named = f"Did you mean '{TICKER_ARGUMENT}'?"
        first["warnings"] = [warning.replace(hint, named) for warning in first["warnings"]]
    rest = {name: value for name, value in body.items() if name not in first and name != "data"}
    return {**first, **rest, **({"data": body["data"]} if "data" in body else {})}
