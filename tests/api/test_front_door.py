"""What every request passes: methods (405, HEAD, OPTIONS), CORS headers, the one error model
(500 and FastAPI's validation errors in the spec's body), and keys kept out of the logs."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import Query

from findata.api.app import create_app
from findata.api.headers import EXPOSED_HEADERS
from findata.logs import JsonFormatter, RequestIdFilter, TextFormatter, logging_config
from findata.settings import Settings
from tests.api.server import RunningApi, serve, start_clock

PATHS = ["/v1/status", "/v1/auth/usage", "/v1/no-such-endpoint", "/v1/prices/AAPL"]


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "TRACE", "CONNECT"])
@pytest.mark.parametrize("path", PATHS)
def test_methods_other_than_get_are_405(api: RunningApi, method: str, path: str) -> None:
    key = api.new_key().key
    with api.client() as client:
        response = client.request(method, path, headers={"X-API-Key": key})
    assert response.status_code == 405
    assert response.headers["Allow"] == "GET"
    assert response.json() == {
        "error": "method_not_allowed",
        "code": "method_not_allowed",
        "status": 405,
        "detail": "Method not allowed: this endpoint accepts GET (and OPTIONS).",
    }
    assert "X-RateLimit-Limit-Day" not in response.headers


@pytest.mark.parametrize("path", PATHS)
def test_head_is_405_without_a_body(api: RunningApi, path: str) -> None:
    with api.client() as client:
        response = client.head(path)
    assert response.status_code == 405
    assert response.headers["Allow"] == "GET"
    assert response.content == b""


@pytest.mark.parametrize("path", PATHS)
def test_options_answers_without_a_key(api: RunningApi, path: str) -> None:
    with api.client() as client:
        response = client.options(
            path, headers={"Origin": "https://app.example", "Access-Control-Request-Method": "GET"}
        )
    assert response.status_code == 204
    assert response.headers["Allow"] == "GET, OPTIONS"
    assert "X-API-Key" in response.headers["Access-Control-Allow-Headers"]
    assert response.headers["Access-Control-Allow-Origin"] == "*"


def test_every_response_exposes_the_rate_limit_headers(api: RunningApi) -> None:
    key = api.new_key().key
    with api.client() as client:
        responses = [
            client.get("/v1/status"),
            client.get("/v1/auth/usage", headers={"X-API-Key": key}),
            client.get("/v1/auth/usage"),
            client.get("/v1/nope", headers={"X-API-Key": key}),
            client.post("/v1/status"),
            client.head("/v1/status"),
            client.options("/v1/status"),
        ]
    for response in responses:
        exposed = [
            name.strip() for name in response.headers["Access-Control-Expose-Headers"].split(",")
        ]
        assert set(EXPOSED_HEADERS) <= set(exposed), response.request.url


@pytest.fixture(scope="module")
def failing_api(published_home: object) -> Iterator[RunningApi]:
    """The real app plus two routes that fail the ways routes can: an exception nobody
    expected, and a parameter FastAPI itself refuses."""
    clock = start_clock()
    app = create_app(Settings(home=published_home), clock)

    @app.get("/v1/test-only/boom")
    def boom() -> None:
        logging.getLogger("findata.api").warning("about to fail")  # on a worker thread
        raise RuntimeError("secret internals: /srv/db password=hunter2")

    @app.get("/v1/test-only/typed")
    def typed(n: int = Query()) -> dict[str, int]:
        return {"n": n}

    with serve(app, clock) as running:
        yield running


def test_an_unexpected_exception_is_the_specs_500_with_nothing_leaked(
    failing_api: RunningApi, caplog: pytest.LogCaptureFixture
) -> None:
    with failing_api.client() as client:
        response = client.get("/v1/test-only/boom")
    assert response.status_code == 500
    assert response.json() == {
        "error": "internal_error",
        "code": "internal_error",
        "status": 500,
        "detail": "Internal server error. Retry after a short wait.",
    }
    assert "hunter2" not in response.text and "Traceback" not in response.text
    assert "Access-Control-Expose-Headers" in response.headers


def test_fastapi_validation_errors_become_the_specs_400(failing_api: RunningApi) -> None:
    with failing_api.client() as client:
        response = client.get("/v1/test-only/typed", params={"n": "many"})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == body["error"] == "bad_request"
    assert body["status"] == 400
    assert body["detail"].startswith("Invalid n")
    assert set(body) == {"error", "code", "status", "detail"}


def test_keys_never_reach_the_logs(api: RunningApi, caplog: pytest.LogCaptureFixture) -> None:
    key = api.new_key().key
    with caplog.at_level(logging.DEBUG), api.client() as client:
        client.get("/v1/auth/usage", params={"api_key": key})
        client.get("/v1/auth/usage", headers={"X-API-Key": key})
        client.get("/v1/auth/usage", params={"api_key": key[:-1]})
        client.get("/v1/nope", params={"api_key": key})
    # the server's records only: the test's own HTTP client (httpx) logs the URLs it sends
    server_side = [
        record for record in caplog.records if not record.name.startswith(("httpx", "httpcore"))
    ]
    assert server_side, "the access log should have recorded the requests"
    logged = "\n".join(record.getMessage() for record in server_side)
    assert key[4:] not in logged and key[4:-1] not in logged
    assert "/v1/auth/usage" in logged


def test_status_is_the_same_with_any_key_or_none(api: RunningApi) -> None:
    key = api.new_key().key
    disabled = api.new_key()
    api.store.set_state(disabled.account.id, "disabled")
    with api.client() as client:
        answers = [
            client.get("/v1/status"),
            client.get("/v1/status", headers={"X-API-Key": key}),
            client.get("/v1/status", headers={"X-API-Key": "fdk_broken"}),
            client.get("/v1/status", params={"api_key": disabled.key}),
        ]
    assert {response.status_code for response in answers} == {200}
    assert len({response.content for response in answers}) == 1
    for response in answers:
        assert not [name for name in response.headers if name.lower().startswith("x-ratelimit")]


def test_status_reports_the_published_version(api: RunningApi, published_home: object) -> None:
    from findata.control_plane.database import engine_for
    from findata.published.versions import current_version

    settings = Settings(home=published_home)
    with engine_for(settings.control_plane_url).connect() as connection:
        version = current_version(connection)
    assert version is not None
    with api.client() as client:
        body = client.get("/v1/status").json()
    assert body["status"] == "ok"
    assert body["version"] == version.label
    assert body["published_at"].endswith("Z")
    assert set(body["datasets"]) == set(version.row_counts)
    prices = body["datasets"]["prices"]
    assert prices["rows"] == version.row_counts["prices"] > 0
    assert prices["data_through"] == version.data_through["prices"]
    # every published dataset says the last date its data covers (contract `data_through`)
    for name, dataset in body["datasets"].items():
        assert dataset["data_through"] is not None, name
        assert dataset["data_through"] == version.data_through[name]
        assert dataset["data_through"] <= prices["data_through"], name


def test_status_before_anything_is_published(api_postgres: RunningApi) -> None:
    with api_postgres.client() as client:
        response = client.get("/v1/status")
    assert response.status_code == 200
    assert response.json() == {
        "status": "no_data",
        "version": None,
        "published_at": None,
        "datasets": {},
    }


def test_usage_counts_the_accounts_requests_today(any_api: RunningApi) -> None:

    issued = any_api.new_key("max")
    other = any_api.store.create_key(issued.account.id)
    any_api.counters.add_usage(issued.account.id, any_api.clock.now(), requests=7, rows=70)
    with any_api.client() as client:
        by_first = client.get("/v1/auth/usage", headers={"X-API-Key": issued.key}).json()
        by_second = client.get("/v1/auth/usage", headers={"X-API-Key": other.key}).json()
    assert by_first == by_second  # all keys of an account share its counters
    assert by_first["requests_today"] == 7
    assert by_first["daily_limit"] == 50_000
    now = any_api.clock.now()
    tomorrow = (now + dt.timedelta(days=1)).date()
    assert by_first["resets_at"] == f"{tomorrow.isoformat()}T00:00:00Z"


@pytest.mark.parametrize("path", ["/v1/prices/{plain}/", "/v1/status/", "/v1/search/"])
def test_a_trailing_slash_is_an_unknown_path_never_a_redirect(
    api: RunningApi, scenarios: dict[str, Any], path: str
) -> None:
    """Issue 42 point 7: no redirect (its Location named the request's Host header); the spec's
    answer to an unknown /v1/ path, the key checked before the path."""
    path = path.format(plain=scenarios["plain"]["ticker"])
    key = api.new_key().key
    with api.client() as client:
        keyless = client.get(path, headers={"Host": "evil.example"})
        keyed = client.get(path, headers={"Host": "evil.example", "X-API-Key": key})
    assert keyless.status_code == 401, keyless.headers
    assert keyless.json()["code"] == "unauthorized"
    assert keyed.status_code == 404
    assert keyed.json() == {
        "error": "not_found",
        "code": "not_found",
        "status": 404,
        "detail": "Unknown endpoint",
    }
    for answer in (keyless, keyed):
        assert "location" not in answer.headers


def test_no_trailing_slash_redirect_anywhere(api: RunningApi) -> None:
    with api.client() as client:
        answer = client.get("/dashboard/", headers={"Host": "evil.example"})
    assert not answer.is_redirect and "location" not in answer.headers
    assert "evil.example" not in answer.text


def test_an_encoded_slash_stays_inside_its_path_parameter(
    api: RunningApi, scenarios: dict[str, Any]
) -> None:
    """Issue 42 point 7: ``%2F`` in a path parameter is part of its value (refused or resolved
    by the usual checks), never a separator that routes elsewhere."""
    index, plain = scenarios["index_events"]["index"], scenarios["plain"]["ticker"]
    key = api.new_key("max").key
    with api.client() as client:
        for slash in ("%2F", "%2f"):
            # as a separator it would be /v1/index/<index>/events, a 200
            answer = client.get(f"/v1/index/{index}{slash}events", headers={"X-API-Key": key})
            assert slash in answer.request.url.raw_path.decode()  # sent as is
            assert answer.status_code == 400, answer.text
            assert answer.json()["detail"].startswith(f"Unknown index: {index}/events. ")
        prices = client.get(f"/v1/prices/{plain}%2FB", headers={"X-API-Key": key})
        assert prices.status_code == 404
        assert prices.json()["detail"] == f"No matching entities for: {plain}/B"
        # an encoded % is a % (not decoded twice), other escapes are decoded once
        percent = client.get(f"/v1/prices/{plain}%252FB", headers={"X-API-Key": key})
        assert percent.json()["detail"] == f"No matching entities for: {plain}%2FB"
        escaped = "".join(f"%{ord(c):02X}" for c in plain)
        assert client.get(f"/v1/prices/{escaped}", headers={"X-API-Key": key}).status_code == 200
        # a path made of an encoded separator is no /v1/ path of any endpoint
        assert client.get("/v1%2Fstatus").status_code == 404


MCP_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def test_every_response_carries_a_request_id(failing_api: RunningApi) -> None:
    """Issue 42 point 16: every response, errors, operators' routes, dashboard pages and MCP
    included, names its request's id: the one sent when it is a safe id, else a new one."""
    key = failing_api.new_key().key
    with failing_api.client() as client:
        answers = [
            client.get("/v1/status"),
            client.get("/v1/auth/usage"),  # 401
            client.get("/v1/nope", headers={"X-API-Key": key}),  # 404
            client.post("/v1/status"),  # 405
            client.options("/v1/status"),
            client.get("/v1/test-only/boom"),  # 500
            client.get("/healthz"),
            client.get("/metrics"),
            client.get("/dashboard/sign-in"),
            client.post("/mcp", json=MCP_CALL, headers={"Accept": "application/json"}),
        ]
        made = [answer.headers.get("X-Request-Id") for answer in answers]
        assert all(made), [a.request.url for a, m in zip(answers, made, strict=True) if not m]
        assert len(set(made)) == len(made)  # a new id each
        for sent in ("req-1", "b7a8f3c2-1d2e-4f5a-9b8c-7d6e5f4a3b2c", "A:b/c+d=_.", "x" * 128):
            answer = client.get("/v1/status", headers={"X-Request-Id": sent})
            assert answer.headers["X-Request-Id"] == sent
        for unsafe in ("x" * 129, "a b", 'a"b', "a{b}", "", "é"):
            answer = client.get("/v1/status", headers={"X-Request-Id": unsafe.encode()})
            replaced = answer.headers["X-Request-Id"]
            assert replaced != unsafe and len(replaced) == 32 and int(replaced, 16) >= 0
    exposed = answers[0].headers["Access-Control-Expose-Headers"]
    assert "X-Request-Id" in exposed.split(", ")
    assert "X-Request-Id" in answers[4].headers["Access-Control-Allow-Headers"]


def test_every_log_line_of_a_request_names_its_id(
    failing_api: RunningApi, caplog: pytest.LogCaptureFixture
) -> None:
    """The lines a request's answering writes, on its worker thread and on the event loop,
    carry its id, in JSON and in text (the handler ``findata/logs.py`` configures)."""
    config = logging_config("json")
    written = {"json": io.StringIO(), "text": io.StringIO()}
    handlers = []
    for name, formatter in (("json", JsonFormatter()), ("text", TextFormatter())):
        handler = logging.StreamHandler(written[name])
        handler.setFormatter(formatter)
        assert config["handlers"]["stderr"]["filters"] == ["request_id"]
        handler.addFilter(RequestIdFilter())
        handlers.append(handler)
    logger = logging.getLogger("findata.api")
    for handler in handlers:
        logger.addHandler(handler)
    try:
        with caplog.at_level(logging.INFO, "findata.api"), failing_api.client() as client:
            answer = client.get("/v1/test-only/boom", headers={"X-Request-Id": "boom-1"})
            other = client.get("/v1/status")
    finally:
        for handler in handlers:
            logger.removeHandler(handler)
    assert answer.headers["X-Request-Id"] == "boom-1"
    entries = [json.loads(line) for line in written["json"].getvalue().splitlines()]
    ours = [entry for entry in entries if entry.get("request_id") == "boom-1"]
    assert [entry["message"] for entry in ours][:2] == [
        "about to fail",
        "unhandled error on GET /v1/test-only/boom",
    ]
    assert ours[-1]["logger"] == "findata.api.access" and ours[-1]["status"] == 500
    (status_line,) = [entry for entry in entries if entry.get("route") == "/v1/status"]
    assert status_line["request_id"] == other.headers["X-Request-Id"]
    text = written["text"].getvalue()
    assert "WARNING findata.api: about to fail request_id=boom-1" in text
    assert "GET /v1/status 200 " in text and f"request_id={other.headers['X-Request-Id']}" in text
