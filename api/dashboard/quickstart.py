"""The keys page's quickstart: the first calls with the account's key, as a curl, a few lines
of the Python client and an MCP client's configuration, on the service's own address. The key
is the one just created on its one display; otherwise a placeholder that shows which key."""

from __future__ import annotations

import json
from dataclasses import dataclass

from findata.accounts.keys import KEY_PREFIX

#: where no key is to show: the format's start, then an ellipsis
PLACEHOLDER = f"{KEY_PREFIX}…"
#: the OpenAPI reference FastAPI serves (every endpoint and parameter, from the contracts)
REFERENCE = "/docs"
OPENAPI = "/openapi.json"


@dataclass(frozen=True)
class Quickstart:
    """The three ways to make a first call, each ready to copy."""

    key: str
    curl: str
    python: str
    mcp: str
    mcp_url: str
    base_url: str


def key_hint(prefix: str | None) -> str:
    """What stands for a key that is not shown: its prefix, or the format's start."""
    return f"{prefix}…" if prefix else PLACEHOLDER


def quickstart(base_url: str, key: str) -> Quickstart:
    """The quickstart for the service at ``base_url`` with ``key`` (a key or a hint)."""
    base = base_url.rstrip("/")
    header = f'-H "X-API-Key: {key}"'
    curl = "\n".join(
        (
            "# your plan and today's usage: the key works",
            f'curl {header} "{base}/v1/auth/usage"',
            "# five companies and securities, with their tickers",
            f'curl {header} "{base}/v1/search?limit=5"',
            "# daily prices of one of those tickers (in place of TICKER), five a page",
            f'curl {header} "{base}/v1/prices/TICKER?limit=5"',
        )
    )
    python = "\n".join(
        (
            "# pip install findata-python",
            "from findata_client import Client",
            "",
            f'with Client(api_key="{key}", base_url="{base}") as findata:',
            "    print(findata.usage())  # your plan and today's usage",
            '    prices = findata.prices("TICKER")  # every page, typed by the contract',
            '    print(prices.to_pandas()[["ticker", "date", "close", "adj_close"]].tail())',
        )
    )
    mcp_url = f"{base}/mcp"
    mcp = json.dumps(
        {
            "mcpServers": {
                "findata": {"type": "http", "url": mcp_url, "headers": {"X-API-Key": key}}
            }
        },
        indent=2,
        ensure_ascii=False,
    )
    return Quickstart(key, curl, python, mcp, mcp_url, base)
