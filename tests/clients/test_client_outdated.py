"""The outdated-client notice (spec, "Versioning"): against a server that recommends a newer
findata-python, a process gets one ``OutdatedClientWarning`` with the server's message, however
many requests and clients it makes; against a server recommending this version, none. Each
case runs in a process of its own, since the warning is once per process."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from findata.api.client_notices import notice_headers
from findata_client import __version__
from tests.api.server import RunningApi
from tests.clients.clock_server import clock_server

SCRIPT = """
import asyncio, json, sys, warnings
from findata_client import AsyncClient, Client

url, key, ticker = sys.argv[1:4]
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    with Client(key, url) as client:
        client.status()
        client.usage()
        client.prices(ticker, limit=1).first_page
    with Client(key, url) as another:
        another.status()

    async def main():
        async with AsyncClient(key, url) as client:
            await client.status()

    asyncio.run(main())
print(json.dumps([[w.category.__name__, str(w.message), w.filename] for w in seen]))
"""


@pytest.fixture(scope="module")
def newer_api(published_home: Path) -> Iterator[RunningApi]:
    """A server that recommends findata-python 9.9.9."""
    with clock_server(published_home, client_latest_version="9.9.9") as running:
        yield running


def _warnings_of_a_process(api: RunningApi, ticker: str) -> list[list[str]]:
    key = api.new_key("pro").key
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, api.url, key, ticker],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_one_warning_per_process_with_the_server_s_message(
    newer_api: RunningApi, scenarios: dict
) -> None:
    message = notice_headers(f"findata-python/{__version__}", "9.9.9")[
        "X-Service-Client-Update-Message"
    ]
    seen = _warnings_of_a_process(newer_api, scenarios["plain"]["ticker"])
    assert seen == [["OutdatedClientWarning", message, "<string>"]]  # the caller's line


def test_no_warning_when_this_version_is_the_recommended_one(
    api: RunningApi, scenarios: dict
) -> None:
    assert _warnings_of_a_process(api, scenarios["plain"]["ticker"]) == []
