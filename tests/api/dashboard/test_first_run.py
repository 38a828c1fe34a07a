"""A first run that teaches (issue 42, point 6), over real HTTP: after sign-up and the first key,
the keys page's quickstart holds that key, this once, and each of its parts works as shown
(the curl lines run by curl, the Python lines by the Python client, the MCP configuration's
address and header answer a tool call); later it shows only the key's prefix. Keys carry
labels; the billing page compares the plans as contracts/plans.yaml and the endpoint
contracts say; the nav marks the current page."""

from __future__ import annotations

import html
import json
import re
import shlex
import subprocess
import sys
from typing import Any

import httpx

from findata.contracts.endpoints import endpoint_names, load_endpoint_contract
from findata.contracts.plans import load_plans
from tests.api.dashboard.people import DashboardUser
from tests.api.server import RunningApi


def _block(page: str, name: str) -> str:
    """The text of the quickstart's block ``name`` (curl, python, mcp) as the page shows it."""
    match = re.search(rf'<code id="quickstart-{name}">(.*?)</code>', page, re.S)
    assert match, page[:500]
    return html.unescape(match.group(1))


def _run_curl(line: str) -> httpx.Response:
    """Run one curl line of the quickstart as written (no shell), with the answer's status."""
    done = subprocess.run(
        [*shlex.split(line), "--silent", "--write-out", "\n%{http_code}"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    body, status = done.stdout.rsplit("\n", 1)
    return httpx.Response(int(status), content=body.encode())


def test_the_quickstart_holds_the_new_key_once_and_every_part_works(
    dashboard: RunningApi, scenarios: dict[str, Any]
) -> None:
    person = DashboardUser(dashboard)
    account_id = person.sign_up()
    person.post("/dashboard/keys", {"label": "first steps"}, form_page="/dashboard/keys")
    page = person.http.get("/dashboard/keys").text
    key = re.search(r'id="new-key" class="value">([^<]+)<', page)
    assert key
    key_value = key.group(1)
    curl, python, mcp = (_block(page, name) for name in ("curl", "python", "mcp"))
    for block in (curl, python, mcp):
        assert key_value in block and dashboard.url in block
    assert 'href="/docs"' in page and person.http.get("/docs").status_code == 200

    ticker = scenarios["plain"]["ticker"]
    lines = [line for line in curl.splitlines() if line.startswith("curl ")]
    assert len(lines) == 3
    usage, search, prices = (_run_curl(line.replace("TICKER", ticker)) for line in lines)
    assert usage.status_code == 200 and usage.json()["plan"] == "free"
    assert search.status_code == 200 and len(search.json()["data"]) == 5
    assert prices.status_code == 200 and prices.json()["data"][0]["ticker"] == ticker

    ran = subprocess.run(
        [sys.executable, "-c", python.replace("TICKER", ticker)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "'plan': 'free'" in ran.stdout
    assert "adj_close" in ran.stdout and ticker in ran.stdout

    server = json.loads(mcp)["mcpServers"]["findata"]
    assert server["url"] == f"{dashboard.url}/mcp"
    call = {
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "get_usage", "arguments": {}},
    }  # fmt: skip
    with dashboard.client() as client:
        answer = client.post(
            server["url"],
            json=call,
            headers={
                **server["headers"],
                "Accept": "application/json",
                # what a client sends after initialize: a revision with structured results
                "MCP-Protocol-Version": "2025-11-25",
            },
        )
    assert answer.json()["result"]["structuredContent"]["plan"] == "free"

    # afterwards: the key is nowhere; the quickstart names it by its prefix
    later = person.http.get("/dashboard/keys").text
    assert key_value not in later
    [stored] = dashboard.store.list_keys(account_id)
    assert stored["label"] == "first steps" and "first steps" in later
    hint = f"{stored['prefix']}…"
    assert all(hint in _block(later, name) for name in ("curl", "python", "mcp"))
    person.close()


def test_before_any_key_the_quickstart_shows_the_keys_format(dashboard: RunningApi) -> None:
    person = DashboardUser(dashboard)
    person.sign_up()
    page = person.http.get("/dashboard/keys").text
    assert 'X-API-Key: fdk_…"' in _block(page, "curl")
    person.close()


def _comparison(page: str) -> dict[str, list[str]]:
    """The billing page's comparison table: each line's label and its cells."""
    table = re.search(r'<table class="list compare" id="plan-comparison".*?</table>', page, re.S)
    assert table, page[:500]
    rows = {}
    line = r'<tr><th scope="row">([^<]*)(?:<br>.*?)?</th>(.*?)</tr>'
    for label, cells in re.findall(line, table.group(0)):
        rows[html.unescape(label)] = [
            html.unescape(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", cells)
        ]
    return rows


def test_the_billing_page_compares_the_plans_as_the_contracts_say(
    dashboard: RunningApi,
) -> None:
    person = DashboardUser(dashboard)
    person.sign_up()
    rows = _comparison(person.http.get("/dashboard/billing").text)
    plans = list(load_plans().values())

    def figures(value: str) -> list[str]:
        return [
            "No limit" if getattr(each, value) is None else f"{getattr(each, value):,}"
            for each in plans
        ]

    assert rows["Requests per day"] == figures("requests_per_day")
    assert rows["Requests per hour"] == figures("requests_per_hour")
    assert rows["Rows per day"] == figures("rows_per_day")
    assert rows["Tickers per request"] == figures("tickers_per_request")
    assert rows["Active API keys"] == figures("active_keys")
    for contract in map(load_endpoint_contract, endpoint_names()):
        if contract.kind != "data":
            continue
        expected = [
            "Yes" if contract.capability is None or each.allows(contract.capability) else "No"
            for each in plans
        ]
        assert rows[contract.summary] == expected, contract.name
    history = rows["History served"]
    assert [cell == "Full history" for cell in history] == [
        each.history_floor_years is None for each in plans
    ]
    webhooks = rows["Webhook endpoints (data.changed events)"]
    assert [cell != "No" for cell in webhooks] == [each.webhook_endpoints > 0 for each in plans]
    for each, cell in zip(plans, webhooks, strict=True):
        assert cell == "No" if not each.webhook_endpoints else str(each.webhook_endpoints) in cell
    person.close()


def test_the_nav_marks_the_current_page(dashboard: RunningApi) -> None:
    person = DashboardUser(dashboard)
    person.sign_up()
    pages = {
        "/dashboard/keys": "Keys",
        "/dashboard/usage": "Usage",
        "/dashboard/billing": "Plan &amp; billing",
        "/dashboard/webhooks": "Webhooks",
        "/dashboard/account": "Account",
        "/dashboard/webhooks/ep_none": "Webhooks",  # a page under Webhooks
    }
    for path, label in pages.items():
        answer = person.http.get(path)
        current = re.findall(r'<a href="([^"]+)" aria-current="page">([^<]+)</a>', answer.text)
        assert [text for _, text in current] == [label], (path, current)
    person.close()
