"""A transcript of an MCP session with the official SDK's ``Client`` on a running findata
service: what ``initialize`` says, the tools with their annotations and output schemas, and a
default ``get_prices`` call (its size against the budget, warnings and meta first).

    .venv/bin/python -m tests.api.mcp_transcript --url http://127.0.0.1:8000 --key fdk_... \\
        --ticker NOC
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from findata.api.responses import json_bytes


async def transcript(url: str, key: str, ticker: str) -> None:
    """Print the session, step by step."""
    sent: list[int] = []

    async def measure(response: httpx2.Response) -> None:
        await response.aread()
        sent.append(len(response.content))

    async with (
        httpx2.AsyncClient(
            headers={"X-API-Key": key}, timeout=60, event_hooks={"response": [measure]}
        ) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        info = client.server_info
        named = f"{info.name} {info.version}" if info else "unnamed"
        print(f"protocol {client.protocol_version}; server {named}")
        print(f"instructions: {client.instructions}")
        listed = await client.list_tools()
        print(f"\n{len(listed.tools)} tools:")
        for tool in listed.tools:
            hints = tool.annotations
            schema: dict[str, Any] = tool.output_schema or {}
            print(
                f"  {tool.name}: readOnly={hints and hints.read_only_hint} "
                f"openWorld={hints and hints.open_world_hint} "
                f"required={tool.input_schema.get('required', [])} "
                f"outputSchema: {schema.get('type')} of {sorted(schema.get('properties', {}))}"
            )
        arguments = {"ticker": ticker, "symbol": ticker}  # a misspelt argument: a warning
        result = await client.call_tool("get_prices", arguments)
        body = result.structured_content or {}
        print(f"\nget_prices {arguments}")
        print(f"  result JSON {len(json_bytes(body))} bytes; JSON-RPC response {sent[-1]} bytes")
        print(f"  content blocks {len(result.content)}; structuredContent keys {list(body)}")
        print(f"  warnings {body.get('warnings')}")
        meta = body.get("meta", {})
        for name in ("count", "budget_bytes", "cut_to_budget", "has_more", "narrow"):
            print(f"  meta.{name} = {meta.get(name)!r}")
        print(f"  meta.next_cursor = {str(meta.get('next_cursor'))[:40]}...")
        rows = body.get("data", [])
        print(f"  rows {len(rows)}: {rows[0]['date']} .. {rows[-1]['date']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--ticker", required=True)
    args = parser.parse_args()
    anyio.run(transcript, args.url, args.key, args.ticker)


if __name__ == "__main__":
    main()
