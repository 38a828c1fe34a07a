"""Retries as the spec's recommended retry says ("Client behaviour"), through a fault-injecting
proxy in front of the real server: 500, 502, 503, timeouts and dropped connections are tried up
to three attempts in all, with growing, jittered waits; a 504 is never sent again unchanged (its
error says how to narrow the request); a 4xx (429 included) is never sent again. With
``wait_on_rate_limit`` a 429 is waited out as recommended, on a server whose clock the test's
sleep moves: ``retry_after_seconds``, else the next UTC clock hour or 00:00 UTC. Each wait is
logged with its reason, each page fetched too, and the key never."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from findata.accounts.ips import block_ip, unblock_ip
from findata.api.errors import ApiError
from findata_client import Client, FindataConnectionError, FindataError, __version__
from findata_client.errors import (
    ERROR_CLASSES,
    BurstLimitReachedError,
    QueryTimeoutError,
    RequestTimeoutError,
    TemporarilyBlockedError,
)
from tests.api.server import RunningApi, free_port
from tests.clients.clock_server import (
    TO_MIDNIGHT,
    TO_NEXT_HOUR,
    MovingSleep,
    clock_server,
    ten_fifteen,
    use,
)
from tests.clients.fault_proxy import DROP, HANG, FaultProxy, Reply, fault_proxy

#: a start inside the Free plan's history (no floor warning)
A_WEEK_AGO = dt.datetime.now(dt.UTC).date() - dt.timedelta(days=7)
#: one attempt's timeout when the proxy hangs (the test waits it three times)
SHORT = 0.25


class Sleeps(list[float]):
    """A ``sleep`` that records instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture(scope="module")
def proxy(api: RunningApi) -> Iterator[FaultProxy]:
    with fault_proxy(api.url) as running:
        yield running


@pytest.fixture(scope="module")
def key(api: RunningApi) -> str:
    return api.new_key("redistribution").key


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def client(proxy: FaultProxy, key: str, sleeps: Sleeps) -> Iterator[Client]:
    """A client of the proxy whose waits are recorded, not slept."""
    with Client(key, proxy.url, sleep=sleeps, timeout=SHORT) as made:
        yield made


def _body(code: str) -> dict[str, Any]:
    """The body the server gives for ``code`` (its own error model)."""
    return ApiError(code).body()


def _assert_backoff(waits: list[float]) -> None:
    """0.5 s x 2^n x a jitter in [1, 1.5): each wait in its band, so each longer than the last."""
    for n, wait in enumerate(waits):
        assert 0.5 * 2**n <= wait < 0.75 * 2**n, waits


FAULTS = {
    "500-internal": Reply.json(500, _body("internal_error")),
    "502-html": Reply.html(502),
    "502-empty": Reply(502, b"", "text/plain"),
    "503-coverage": Reply.json(503, _body("coverage_unavailable")),
    "503-html": Reply.html(503),
}


@pytest.mark.parametrize("fault", FAULTS.values(), ids=list(FAULTS))
def test_500_502_503_get_three_attempts_then_raise(
    fault: Reply, proxy: FaultProxy, client: Client, sleeps: Sleeps
) -> None:
    proxy.script(fault, fault, fault)
    with pytest.raises(FindataError) as raised:
        client.status()
    assert proxy.attempts == 3
    assert raised.value.status == fault.status
    code = raised.value.code
    assert type(raised.value) is (ERROR_CLASSES[code] if code else FindataError)
    assert len(sleeps) == 2
    _assert_backoff(sleeps)


@pytest.mark.parametrize(
    "faults",
    [(Reply.html(502),), (Reply.html(503), Reply.json(500, _body("internal_error"))), (DROP, HANG)],
    ids=["second-passes", "third-passes", "dropped-then-hung-then-passes"],
)
def test_a_later_attempt_that_passes_is_the_answer(
    faults: tuple[Any, ...], proxy: FaultProxy, client: Client, sleeps: Sleeps, api: RunningApi
) -> None:
    proxy.script(*faults)
    assert client.status() == httpx.get(f"{api.url}/v1/status").json()
    assert proxy.attempts == len(faults) + 1
    assert len(sleeps) == len(faults)
    _assert_backoff(sleeps)


@pytest.mark.parametrize("fault", [HANG, DROP], ids=["timeout", "dropped"])
def test_timeouts_and_dropped_connections_get_three_attempts(
    fault: str, proxy: FaultProxy, client: Client, sleeps: Sleeps
) -> None:
    proxy.script(fault, fault, fault)
    with pytest.raises(FindataConnectionError) as raised:
        client.status()
    assert proxy.attempts == 3 and raised.value.attempts == 3
    expected = httpx.TimeoutException if fault == HANG else httpx.RemoteProtocolError
    assert isinstance(raised.value.__cause__, expected)
    _assert_backoff(sleeps)
    assert len(sleeps) == 2


def test_a_server_that_is_not_there(key: str, sleeps: Sleeps) -> None:
    nowhere = Client(key, f"http://127.0.0.1:{free_port()}", sleep=sleeps)
    with nowhere, pytest.raises(FindataConnectionError) as raised:
        nowhere.status()
    assert raised.value.attempts == 3
    assert isinstance(raised.value.__cause__, httpx.ConnectError)
    _assert_backoff(sleeps)


TIMEOUTS = {
    "request-timeout": (Reply.json(504, _body("request_timeout")), RequestTimeoutError),
    "query-timeout": (Reply.json(504, _body("query_timeout")), QueryTimeoutError),
    "gateway-page": (Reply.html(504), FindataError),
}


@pytest.mark.parametrize(("reply", "raised_class"), TIMEOUTS.values(), ids=list(TIMEOUTS))
def test_a_504_is_not_sent_again_unchanged_but_says_how_to_narrow(
    reply: Reply,
    raised_class: type[FindataError],
    proxy: FaultProxy,
    client: Client,
    sleeps: Sleeps,
    scenarios: dict,
) -> None:
    tickers = [scenarios["plain"]["ticker"], *scenarios["share_classes"]["class_tickers"]]
    proxy.script(reply)  # a second attempt would pass
    with pytest.raises(FindataError) as raised:
        client.prices(tickers, start="2020-01-01", end="2025-03-31")
    assert type(raised.value) is raised_class and raised.value.status == 504
    assert proxy.attempts == 1 and sleeps == []
    (note,) = raised.value.__notes__
    assert "Not sent again unchanged" in note
    assert "a shorter date range (start/end; now start=2020-01-01, end=2025-03-31)" in note
    assert "fewer tickers or entity ids (now 3)" in note
    # the narrowed request, sent again by the caller, is answered
    narrowed = client.prices(tickers[0], start="2025-03-01", end="2025-03-31").to_list()
    assert narrowed and proxy.attempts == 2


@pytest.mark.parametrize(
    "reply",
    [
        Reply.json(429, ApiError("burst_limit_reached", "x", retry_after_seconds=60).body()),
        Reply.json(429, _body("hourly_usage_limit")),
        Reply.json(400, ApiError("bad_request", "Invalid cursor").body()),
        Reply.html(501),
    ],
    ids=["429-burst", "429-hourly", "400", "501-html"],
)
def test_4xx_and_429_are_never_sent_again(
    reply: Reply, proxy: FaultProxy, client: Client, sleeps: Sleeps
) -> None:
    proxy.script(reply, reply, reply)
    with pytest.raises(FindataError) as raised:
        client.status()
    assert raised.value.status == reply.status
    assert proxy.attempts == 1 and sleeps == []


def test_real_4xx_answers_are_not_retried(
    api: RunningApi, proxy: FaultProxy, client: Client, sleeps: Sleeps, scenarios: dict
) -> None:
    proxy.script()
    with pytest.raises(FindataError, match="not_found"):
        client.prices("ZZZQQ").to_list()
    assert proxy.attempts == 1
    free = api.new_key("free")
    use(api, free.account.id, requests=40)
    proxy.script()
    limited = Client(free.key, proxy.url, sleep=sleeps)
    with limited, pytest.raises(BurstLimitReachedError):
        limited.prices(scenarios["plain"]["ticker"]).to_list()
    assert proxy.attempts == 1 and sleeps == []


def test_the_waits_are_jittered_and_attempts_configurable(proxy: FaultProxy, key: str) -> None:
    runs = []
    for _ in range(4):
        sleeps = Sleeps()
        proxy.script(*[Reply.html(503)] * 5)
        patient = Client(key, proxy.url, sleep=sleeps, max_attempts=5)
        with patient, pytest.raises(FindataError):
            patient.status()
        assert proxy.attempts == 5
        _assert_backoff(sleeps)
        runs.append(tuple(sleeps))
    assert len(set(runs)) == len(runs)  # no two clients wait alike
    with pytest.raises(ValueError):
        Client(key, proxy.url, max_attempts=0)


def test_each_page_is_retried_on_its_own(
    proxy: FaultProxy, client: Client, sleeps: Sleeps, scenarios: dict, api: RunningApi, key: str
) -> None:
    window = {"start": "2025-01-01", "end": "2025-03-31", "limit": 10}
    with Client(key, api.url) as direct:
        pages = list(direct.prices(scenarios["plain"]["ticker"], **window).pages())
    assert len(pages) > 3
    # the second page fails once, the third is dropped once
    proxy.script("pass", Reply.html(502), "pass", DROP)
    rows = client.prices(scenarios["plain"]["ticker"], **window)
    assert rows.to_list() == [row for page in pages for row in page.data]
    assert proxy.attempts == len(pages) + 2 and len(sleeps) == 2


def test_waits_and_pages_are_logged(
    proxy: FaultProxy,
    client: Client,
    sleeps: Sleeps,
    key: str,
    scenarios: dict,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="findata_client")
    plain = scenarios["plain"]["ticker"]
    # the second page is refused once
    proxy.script("pass", Reply.json(503, _body("coverage_unavailable")))
    rows = client.prices(plain, start="2025-01-01", end="2025-03-31", limit=20).to_list()
    count = -(-len(rows) // 20)  # pages of 20
    assert count > 2
    pages = [r for r in caplog.records if r.name == "findata_client.results"]
    assert [r.levelno for r in pages] == [logging.INFO] * count
    request = f"/v1/prices/{plain}?start=2025-01-01&end=2025-03-31&limit=20"
    assert pages[0].getMessage() == f"{request}: page 1, 20 rows (20 so far)"
    last = len(rows) - 20 * (count - 1)
    assert pages[-1].getMessage() == f"{request}: page {count}, {last} rows ({len(rows)} so far)"
    (wait,) = [r for r in caplog.records if r.name == "findata_client.transport"]
    assert wait.levelno == logging.WARNING
    assert wait.getMessage() == (
        f"GET /v1/prices/{plain}: 503 coverage_unavailable, attempt 1 of 3; "
        f"sending it again in {sleeps[0]:.2f} s"
    )
    caplog.clear()
    proxy.script(DROP, Reply.html(502))
    client.status()
    assert [r.getMessage().split("; ")[0] for r in caplog.records] == [
        "GET /v1/status: RemoteProtocolError (no answer), attempt 1 of 3",
        "GET /v1/status: 502 (not the API's body), attempt 2 of 3",
    ]
    # a key sent as the api_key parameter is not shown either
    with Client("", proxy.url) as keyless:
        proxy.script()
        found = keyless.paginate(f"/v1/prices/{plain}", {"api_key": key, "limit": 5})
        assert found.first_page.data and "api_key=***" in repr(found)
    assert "api_key=***" in caplog.text
    assert key not in caplog.text


def test_the_user_agent_and_where_the_key_goes(
    proxy: FaultProxy, client: Client, key: str, api: RunningApi
) -> None:
    proxy.script()
    client.status()
    (seen,) = proxy.requests
    assert seen.headers["user-agent"] == f"findata-python/{__version__}"
    assert seen.headers["x-api-key"] == key
    # a URL on another host than the base URL's gets no key
    proxy.script()
    with Client(key, api.url) as elsewhere:
        elsewhere.get(f"{proxy.url}/v1/status")
    (seen,) = proxy.requests
    assert "x-api-key" not in seen.headers


# -- waiting out 429s (opt-in) -----------------------------------------------------------------


@pytest.fixture(scope="module")
def clock_api(published_home: Path) -> Iterator[RunningApi]:
    with clock_server(published_home) as running:
        yield running


@pytest.fixture
def at_ten_fifteen(clock_api: RunningApi) -> Iterator[RunningApi]:
    clock_api.clock.set(ten_fifteen())
    yield clock_api
    clock_api.clock.set(ten_fifteen())


def _waiting_client(api: RunningApi, key: str | None, sleep: MovingSleep) -> Client:
    return Client(key, api.url, wait_on_rate_limit=True, clock=api.clock.now, sleep=sleep)


@pytest.mark.parametrize(
    ("usage", "wait", "reason"),
    [
        ({"requests": 40}, TO_NEXT_HOUR, "429 burst_limit_reached: retry_after_seconds"),
        ({"requests": 100}, TO_MIDNIGHT, "429 daily_limit_reached: retry_after_seconds"),
        (
            {"rows": 100_000},
            TO_NEXT_HOUR,
            "429 hourly_usage_limit: waiting to the next UTC clock hour",
        ),
        ({"rows": 500_000}, TO_MIDNIGHT, "429 row_limit_exceeded: waiting to 00:00 UTC"),
    ],
    ids=["burst", "daily", "hourly-rows", "daily-rows"],
)
def test_wait_on_rate_limit_waits_the_recommended_time(
    usage: dict[str, int],
    wait: int,
    reason: str,
    at_ten_fifteen: RunningApi,
    scenarios: dict,
    caplog: pytest.LogCaptureFixture,
) -> None:
    api = at_ten_fifteen
    free = api.new_key("free")
    use(api, free.account.id, **usage)
    sleep = MovingSleep(api.clock)
    plain = scenarios["plain"]["ticker"]
    caplog.set_level(logging.WARNING, logger="findata_client")
    with _waiting_client(api, free.key, sleep) as client:
        page = client.prices(plain, start=A_WEEK_AGO, limit=1).first_page
    assert page.data and sleep == [wait]
    (logged,) = caplog.records
    assert (
        logged.getMessage() == f"GET /v1/prices/{plain}: {reason}; sending it again in {wait:.2f} s"
    )


def test_wait_on_rate_limit_for_index_snapshots(
    at_ten_fifteen: RunningApi, scenarios: dict
) -> None:
    api = at_ten_fifteen
    free = api.new_key("free")
    days = [(dt.date(2024, 1, 1) + dt.timedelta(days=n)).isoformat() for n in range(51)]
    api.counters.add_distinct(free.account.id, api.clock.now().date(), "as_of", days)
    sleep = MovingSleep(api.clock)
    with _waiting_client(api, free.key, sleep) as client:
        roster = client.index(scenarios["index_events"]["index"], as_of=days[0]).to_list()
    assert roster and sleep == [TO_MIDNIGHT]


def test_what_is_not_waited_out(at_ten_fifteen: RunningApi, scenarios: dict) -> None:
    api = at_ten_fifteen
    sleep = MovingSleep(api.clock)
    block_ip(api.store.engine, "127.0.0.1", api.clock.now())
    try:
        keyless = _waiting_client(api, None, sleep)
        with keyless, pytest.raises(TemporarilyBlockedError):  # no retry_after_seconds
            keyless.search(q="a").to_list()
    finally:
        unblock_ip(api.store.engine, "127.0.0.1")
    free = api.new_key("free")
    use(api, free.account.id, requests=40)
    not_opted_in = Client(free.key, api.url, clock=api.clock.now, sleep=sleep)
    with not_opted_in, pytest.raises(BurstLimitReachedError):
        not_opted_in.prices(scenarios["plain"]["ticker"]).to_list()
    assert sleep == []
