"""Retries as the spec's "Client behaviour" says, through a fault-injecting proxy in front of the
real server: 502, 503, 504, timeouts and dropped connections are tried up to three attempts in
all, with growing, jittered waits; a 4xx (429 included) and a 500 are never sent again. With
``wait_on_rate_limit`` a 429 is waited out as recommended, on a server whose clock the test's
sleep moves: ``retry_after_seconds``, else the next UTC clock hour or 00:00 UTC."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from findata.accounts.ips import block_ip, unblock_ip
from findata.api.errors import ApiError
from findata_client import Client, FindataConnectionError, FindataError, __version__
from findata_client._generated import ERROR_CLASSES
from findata_client.errors import BurstLimitReachedError, TemporarilyBlockedError
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
    "502-html": Reply.html(502),
    "502-empty": Reply(502, b"", "text/plain"),
    "503-coverage": Reply.json(503, _body("coverage_unavailable")),
    "503-html": Reply.html(503),
    "504-request-timeout": Reply.json(504, _body("request_timeout")),
    "504-query-timeout": Reply.json(504, _body("query_timeout")),
}


@pytest.mark.parametrize("fault", FAULTS.values(), ids=list(FAULTS))
def test_5xx_gateway_answers_get_three_attempts_then_raise(
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
    [(Reply.html(502),), (Reply.html(503), Reply.json(504, _body("query_timeout"))), (DROP, HANG)],
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


@pytest.mark.parametrize(
    "reply",
    [
        Reply.json(429, ApiError("burst_limit_reached", "x", retry_after_seconds=60).body()),
        Reply.json(429, _body("hourly_usage_limit")),
        Reply.json(500, _body("internal_error")),
        Reply.json(400, ApiError("bad_request", "Invalid cursor").body()),
        Reply.html(501),
    ],
    ids=["429-burst", "429-hourly", "500", "400", "501-html"],
)
def test_4xx_429_and_500_are_never_sent_again(
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
    ("usage", "wait"),
    [
        ({"requests": 40}, TO_NEXT_HOUR),  # burst: retry_after_seconds
        ({"requests": 100}, TO_MIDNIGHT),  # daily: retry_after_seconds
        ({"rows": 100_000}, TO_NEXT_HOUR),  # hourly_usage_limit: to the next clock hour
        ({"rows": 500_000}, TO_MIDNIGHT),  # row_limit_exceeded: to 00:00 UTC
    ],
    ids=["burst", "daily", "hourly-rows", "daily-rows"],
)
def test_wait_on_rate_limit_waits_the_recommended_time(
    usage: dict[str, int], wait: int, at_ten_fifteen: RunningApi, scenarios: dict
) -> None:
    api = at_ten_fifteen
    free = api.new_key("free")
    use(api, free.account.id, **usage)
    sleep = MovingSleep(api.clock)
    with _waiting_client(api, free.key, sleep) as client:
        page = client.prices(scenarios["plain"]["ticker"], start=A_WEEK_AGO, limit=1).first_page
    assert page.data and sleep == [wait]


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
