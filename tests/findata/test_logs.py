"""Structured logs (issue 22): ``findata serve`` with ``FINDATA_LOG_FORMAT=json`` writes every
log line as one JSON object, one per request with the route template, status, duration and
account id, never the key, the path's ticker or the query string, and the request's id (the
``X-Request-Id`` sent, or a new one: issue 42); the default is readable text with the same
fields. The API's processes write their lines from a thread of their own
(``BackgroundStderrHandler``): with two workers every request answered, a tool call on /mcp
too (with its key's account), has exactly one line, those answered just before SIGTERM too;
the handler writes each line once, in order, from its own thread, and a process that ends
writes the lines still waiting."""

from __future__ import annotations

import json
import logging
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from findata.accounts.store import AccountStore
from findata.clock import SystemClock
from findata.control_plane.database import engine_for
from findata.logs import BackgroundStderrHandler, JsonFormatter, log_fields
from findata.settings import Settings
from tests.api.server import copy_published_home, free_port
from tests.databases import upgraded
from tests.findata.stopping import FINDATA, command_env, command_group, wait_answering

#: the id a proxy in front of the service gives the request (issue 42 point 16)
REQUEST_ID = "edge-7f3a9c"


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
        answer = httpx.get(
            f"{url}/v1/prices/{ticker}",
            params={"api_key": issued.key},
            headers={"X-Request-Id": REQUEST_ID},
        )
        assert answer.status_code == 200, answer.text
        assert answer.headers["X-Request-Id"] == REQUEST_ID
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    return log.read_text(), issued.key, issued.account.id


def test_json_lines_name_the_route_and_account_never_the_key(
    published_home: Path, tmp_path: Path, scenarios: dict[str, Any]
) -> None:
    ticker = scenarios["plain"]["ticker"]
    text, key, account_id = served_log(published_home, tmp_path, ticker, "json")
    entries = [json.loads(line) for line in text.splitlines()]  # every line, the banner too
    assert {"time", "level", "logger", "message"} <= set(entries[0])
    (banner,) = [e for e in entries if e["logger"] == "findata.cli"]
    assert banner["workers"] == 1 and banner["counters"] == "memory"
    requests = [e for e in entries if e["logger"] == "findata.api.access"]
    prices = [e for e in requests if e["route"] == "/v1/prices/{tickers}"]
    assert len(prices) == 1
    assert prices[0]["status"] == 200 and prices[0]["method"] == "GET"
    assert prices[0]["account_id"] == account_id
    assert prices[0]["duration_ms"] > 0
    assert prices[0]["request_id"] == REQUEST_ID
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
    assert line.endswith(f"ms account_id={account_id} request_id={REQUEST_ID}")
    assert key not in text


class Recorded:
    """A stand-in for stderr that keeps each write apart, with the thread that made it."""

    def __init__(self) -> None:
        self.writes: list[str] = []
        self.writers: set[int] = set()

    def write(self, text: str) -> int:
        self.writes.append(text)
        self.writers.add(threading.get_ident())
        return len(text)

    def flush(self) -> None:
        pass


def background_logger(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[logging.Logger, BackgroundStderrHandler, Recorded]:
    """A logger of its own whose one handler is a background handler writing to a recorder."""
    recorded = Recorded()
    monkeypatch.setattr(sys, "stderr", recorded)
    handler = BackgroundStderrHandler()
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger(name)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    monkeypatch.setattr(logger, "handlers", [handler])
    return logger, handler, recorded


def test_background_lines_are_written_by_another_thread_in_order_by_flush(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    logger, handler, recorded = background_logger("tests.background.flush", monkeypatch)
    shown = ["first"]
    logger.info("request %d %s", 0, shown, extra=log_fields(route="/v1/status"))
    shown.append("changed after logging")  # the line shows the argument as it was
    for n in range(1, 200):
        logger.info("request %d %s", n, "x" * 60, extra=log_fields(route="/v1/status"))
    handler.flush()  # returns once the 200 lines are written
    lines = "".join(recorded.writes).splitlines()
    messages = [json.loads(line)["message"] for line in lines]
    assert messages == ["request 0 ['first']", *[f"request {n} {'x' * 60}" for n in range(1, 200)]]
    assert all(json.loads(line)["route"] == "/v1/status" for line in lines)
    assert threading.get_ident() not in recorded.writers  # the logging thread wrote none
    handler.close()
    assert len("".join(recorded.writes).splitlines()) == 200  # nothing written twice
    logger.info("after close")  # written at once: no thread is left to write it
    assert json.loads(recorded.writes[-1])["message"] == "after close"


def test_background_lines_from_many_threads_are_written_once_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    logger, handler, recorded = background_logger("tests.background.threads", monkeypatch)

    def log_lines(thread: int) -> None:
        for n in range(500):
            logger.info("line %d-%d", thread, n)

    threads = [threading.Thread(target=log_lines, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    handler.flush()
    messages = [json.loads(line)["message"] for line in "".join(recorded.writes).splitlines()]
    assert sorted(messages) == sorted(f"line {t}-{n}" for t in range(4) for n in range(500))
    for thread_number in range(4):  # each thread's lines in the order it logged them
        mine = [m for m in messages if m.startswith(f"line {thread_number}-")]
        assert mine == [f"line {thread_number}-{n}" for n in range(500)]
    handler.close()


def test_a_process_that_ends_writes_the_lines_still_waiting() -> None:
    # the writing is held (the target's lock taken) until the process exits: every line is
    # still queued then, and only logging.shutdown (at exit, after the atexit hook below,
    # registered later) can write them
    script = textwrap.dedent(
        """
        import atexit
        import logging
        from findata.logs import BackgroundStderrHandler, TextFormatter
        handler = BackgroundStderrHandler()
        handler.setFormatter(TextFormatter())
        logging.getLogger().addHandler(handler)
        logging.getLogger().setLevel(logging.INFO)
        handler.target.acquire()
        atexit.register(handler.target.release)
        for n in range(300):
            logging.getLogger("findata.test").info("line %d", n)
        assert handler.queue.qsize() >= 299
        """
    )
    ended = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    lines = ended.stderr.splitlines()
    assert [line.split(": ", 1)[1] for line in lines] == [f"line {n}" for n in range(300)]


def test_two_workers_log_each_request_once_up_to_a_clean_stop(
    published_home: Path, tmp_path: Path, scenarios: dict[str, Any]
) -> None:
    """Each worker writes its lines from a thread of its own (``BackgroundStderrHandler``):
    every request answered has exactly one line, those answered just before SIGTERM too; a tool
    call on /mcp names the key's account as a REST request does."""
    home = tmp_path / "home"
    copy_published_home(published_home, home, None)
    engine = engine_for(f"sqlite:///{home.resolve() / 'control.sqlite'}")
    store = AccountStore(engine, SystemClock())
    issued = store.create_key(store.create_account("lines@example.com", "redistribution").id)
    ticker = scenarios["plain"]["ticker"]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = command_env(home, 10, log_format="json")
    args = ["serve", "--port", str(port), "--workers", "2"]

    def request(n: int) -> tuple[str, int]:
        if n % 2:
            answer = httpx.get(f"{url}/v1/status", timeout=30)
            return "/v1/status", answer.status_code
        answer = httpx.get(
            f"{url}/v1/prices/{ticker}", params={"limit": n + 1, "api_key": issued.key}, timeout=30
        )
        return "/v1/prices/{tickers}", answer.status_code

    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "get_prices", "arguments": {"ticker": ticker, "limit": 2}},
    }
    log = tmp_path / "serve.log"
    with log.open("wb") as output, command_group(args, env, output) as process:
        wait_answering(f"{url}/healthz", process)
        with ThreadPoolExecutor(8) as pool:
            sent = Counter(pool.map(request, range(200)))
        tool = httpx.post(
            f"{url}/mcp",
            json=call,
            headers={
                "X-API-Key": issued.key,
                "Accept": "application/json",
                "MCP-Protocol-Version": "2025-11-25",  # a revision with structured results
            },
            timeout=30,
        )
        assert tool.status_code == 200 and "structuredContent" in tool.json()["result"]
        process.send_signal(signal.SIGTERM)  # at once: the last lines may still be waiting
        assert process.wait(timeout=30) == 0
    text = log.read_text()
    entries = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    access = [e for e in entries if e["logger"] == "findata.api.access"]
    logged = Counter((e["route"], e["status"]) for e in access if e["route"] != "/healthz")
    assert logged == sent + Counter({("/mcp", 200): 1})
    prices = [e for e in access if e["route"] == "/v1/prices/{tickers}"]
    assert {e["account_id"] for e in prices} == {issued.account.id}
    (mcp,) = [e for e in access if e["route"] == "/mcp"]
    assert mcp["method"] == "POST" and mcp["account_id"] == issued.account.id
    assert all(e["account_id"] is None for e in access if e["route"] == "/v1/status")  # no key
    assert len({e["request_id"] for e in access}) == len(access)  # a new id each
    assert issued.key not in text


@pytest.mark.parametrize(
    ("setting", "value", "error"),
    [
        # a database out of reach (a port nobody listens on)
        (
            "database_url",
            "postgresql+psycopg://findata@127.0.0.1:{port}/findata",
            "OperationalError",
        ),
        ("workers", "many", "ValidationError"),  # a setting refused
    ],
)
def test_a_start_up_failure_is_one_json_line(
    tmp_path: Path, setting: str, value: str, error: str
) -> None:
    """Issue 42 point 18: with FINDATA_LOG_FORMAT=json a command that fails as it starts writes
    one JSON line, the traceback a field of it (not a box-drawn traceback), and exits 1."""
    env = command_env(tmp_path / "home", 10, log_format="json")
    env[f"FINDATA_{setting.upper()}"] = value.format(port=free_port())
    ended = subprocess.run(
        [str(FINDATA), "serve", "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ended.returncode == 1
    assert ended.stdout == ""
    (line,) = ended.stderr.splitlines()
    entry = json.loads(line)
    assert entry["level"] == "critical" and entry["logger"] == "findata.cli"
    assert entry["message"].startswith(f"findata failed: {error}: ")
    assert entry["error"] == error
    assert entry["exception"].startswith("Traceback (most recent call last):")


def test_ui_writes_json_lines_only(tmp_path: Path) -> None:
    """Issue 42 point 18: ``findata ui`` with FINDATA_LOG_FORMAT=json: Dagster's own lines (its
    webserver's and daemon's, set by `dagster dev --log-format json`) and findata's are JSON
    lines, from the start to the stop."""
    port = free_port()
    env = command_env((tmp_path / "home").resolve(), 25, log_format="json")
    upgraded(Settings(home=tmp_path / "home").control_plane_url)
    log = tmp_path / "ui.log"
    with (
        log.open("wb") as output,
        command_group(["ui", "--port", str(port)], env, output) as process,
    ):
        wait_answering(f"http://127.0.0.1:{port}/server_info", process, 240)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    loggers = {entry["logger"] for entry in entries}
    assert {"dagster", "dagster-webserver", "findata.shutdown"} <= loggers, loggers


def test_a_refresh_writes_json_lines_only(published_home: Path, tmp_path: Path) -> None:
    """Issue 42 point 18: ``findata refresh`` with FINDATA_LOG_FORMAT=json: Dagster's run events
    (its JSON console logger, named in the run's config) and dbt's lines (printed by the dbt
    step) are JSON lines on stderr; stdout is the outcome's one line."""
    home = tmp_path / "home"
    shutil.copytree(published_home, home, ignore=shutil.ignore_patterns("dagster"))
    env = command_env(home.resolve(), 10, log_format="json")
    ran = subprocess.run(
        [str(FINDATA), "refresh", "--force"], env=env, capture_output=True, text=True, timeout=600
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    entries = [json.loads(line) for line in ran.stderr.splitlines()]
    events = {
        e["dagster_meta"]["dagster_event"]["event_type_value"]
        for e in entries
        if (e.get("dagster_meta") or {}).get("dagster_event")
    }
    assert {"PIPELINE_START", "STEP_START", "PIPELINE_SUCCESS"} <= events, events
    dbt = [e["message"] for e in entries if e.get("logger") == "findata.dbt"]
    assert any("Running with dbt=" in line for line in dbt), dbt[:5]
    assert not any("\x1b[" in line for line in dbt)  # no terminal colours
    # stdout: the outcome's one line (here: the same rows, so no new version), as scripts read it
    assert len(ran.stdout.splitlines()) == 1 and "version" in ran.stdout, ran.stdout
