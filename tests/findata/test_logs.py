"""Structured logs (issue 22): ``findata serve`` with ``FINDATA_LOG_FORMAT=json`` writes every
log line as one JSON object, one per request with the route template, status, duration and
account id, never the key, the path's ticker or the query string; the default is readable text
with the same fields."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import httpx

from findata.accounts.store import AccountStore
from findata.clock import SystemClock
from findata.control_plane.database import engine_for
from tests.api.server import copy_published_home, free_port
from tests.findata.stopping import command_env, command_group, wait_answering


def served_log(
    published_home: Path, tmp_path: Path, ticker: str, log_format: str | None
) -> tuple[str, str, str]:
    """What ``findata serve`` logged for one keyed prices request (key in the query string);
    with the key and the account id."""
    home = tmp_path / "home"
    copy_published_home(published_home, home, None)
    engine = engine_for(f"sqlite:///{home.resolve() / 'control.sqlite'}")
    store = AccountStore(engine, SystemClock())
    issued = store.create_key(store.create_account("logs@example.com", "pro").id)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = command_env(home, 10, **({"log_format": log_format} if log_format else {}))
    log = tmp_path / "serve.log"
    with (
        log.open("wb") as output,
        command_group(["serve", "--port", str(port), "--workers", "1"], env, output) as process,
    ):
        wait_answering(f"{url}/healthz", process)
        answer = httpx.get(f"{url}/v1/prices/{ticker}", params={"api_key": issued.key})
        assert answer.status_code == 200, answer.text
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    return log.read_text(), issued.key, issued.account.id


def test_json_lines_name_the_route_and_account_never_the_key(
    published_home: Path, tmp_path: Path, scenarios: dict[str, Any]
) -> None:
    ticker = scenarios["plain"]["ticker"]
    text, key, account_id = served_log(published_home, tmp_path, ticker, "json")
    lines = [line for line in text.splitlines() if line.startswith("{")]
    entries = [json.loads(line) for line in lines]  # every JSON line parses
    assert {"time", "level", "logger", "message"} <= set(entries[0])
    requests = [e for e in entries if e["logger"] == "findata.api.access"]
    prices = [e for e in requests if e["route"] == "/v1/prices/{tickers}"]
    assert len(prices) == 1
    assert prices[0]["status"] == 200 and prices[0]["method"] == "GET"
    assert prices[0]["account_id"] == account_id
    assert prices[0]["duration_ms"] > 0
    assert any(e["logger"] == "findata.shutdown" for e in entries)  # the stop is logged too
    assert key not in text and "api_key" not in text
    for entry in requests:
        assert ticker not in json.dumps(entry)


def test_text_lines_by_default(
    published_home: Path, tmp_path: Path, scenarios: dict[str, Any]
) -> None:
    ticker = scenarios["plain"]["ticker"]
    text, key, account_id = served_log(published_home, tmp_path, ticker, None)
    (line,) = [line for line in text.splitlines() if "GET /v1/prices/{tickers} 200" in line]
    assert "INFO findata.api.access: GET /v1/prices/{tickers} 200 " in line
    assert line.endswith(f"ms account_id={account_id}")
    assert key not in text
