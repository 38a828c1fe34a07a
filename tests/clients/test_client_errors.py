"""Every error code of contracts/errors.yaml raises its own exception class, with the status,
code, detail and the body's other fields. Real answers of the demo server wherever it can give
them; those it cannot give to a GET client (500 internal_error, 503 coverage_unavailable and
service_unavailable,
504 request_timeout and query_timeout, 405 to a method the client never sends) are the
server's own bodies for them (its error model; a real 405 to a POST) answered through the
fault proxy. Bodies that are not the spec's error body still raise a ``FindataError``."""

from __future__ import annotations

import datetime as dt
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from findata.accounts.ips import block_ip, unblock_ip
from findata.api.errors import ApiError
from findata.contracts.errors import load_errors
from findata_client import Client, FindataError
from findata_client.errors import (
    ERROR_CLASSES,
    AmbiguousTickerError,
    PaginationLimitReachedError,
    UnauthorizedError,
)
from tests.api.server import RunningApi
from tests.clients.fault_proxy import FaultProxy, Reply, fault_proxy

#: codes a GET client cannot get from the demo server; their bodies are replayed by the proxy
REPLAYED = frozenset(
    {
        "internal_error",
        "coverage_unavailable",
        "service_unavailable",
        "request_timeout",
        "query_timeout",
    }
)
COMMON_FIELDS = {"error", "code", "status", "detail", "message"}


@pytest.fixture(scope="module")
def proxy(api: RunningApi) -> Iterator[FaultProxy]:
    with fault_proxy(api.url) as running:
        yield running


@dataclass
class Ctx:
    """What a producer of an error needs: the server, the scenarios, the proxy, and clients
    (closed after the test)."""

    api: RunningApi
    scenarios: dict[str, Any]
    proxy: FaultProxy
    opened: list[Client] = field(default_factory=list)

    def client(self, key: str | None, *, via_proxy: bool = False, **options: Any) -> Client:
        made = Client(key, self.proxy.url if via_proxy else self.api.url, **options)
        self.opened.append(made)
        return made

    def account(self, plan: str) -> tuple[str, str]:
        """A fresh account's id and key."""
        issued = self.api.new_key(plan)
        return issued.account.id, issued.key

    def use(self, subject: str, *, requests: int = 0, rows: int = 0) -> None:
        """Count usage for ``subject`` now, as if it had been served."""
        self.api.counters.add_usage(subject, self.api.clock.now(), requests=requests, rows=rows)

    def replay(self, status: int, body: dict[str, Any]) -> Client:
        """A client whose next request is answered ``body`` by the proxy (one attempt)."""
        self.proxy.script(Reply.json(status, body))
        return self.client(self.account("pro")[1], via_proxy=True, max_attempts=1)

    @property
    def plain(self) -> str:
        return self.scenarios["plain"]["ticker"]

    @property
    def as_of(self) -> dt.date:
        return dt.date.fromisoformat(self.scenarios["as_of"])


@pytest.fixture
def ctx(api: RunningApi, scenarios: dict[str, Any], proxy: FaultProxy) -> Iterator[Ctx]:
    made = Ctx(api, scenarios, proxy)
    yield made
    for client in made.opened:
        client.close()


def _free_with(ctx: Ctx, **usage: int) -> Client:
    account, key = ctx.account("free")
    ctx.use(account, **usage)
    return ctx.client(key)


def _keyless_after_the_hourly_limit(ctx: Ctx) -> None:
    ctx.use("ip:127.0.0.1", requests=40)
    keyless = ctx.client(None)
    with pytest.raises(FindataError, match="burst_limit_reached"):
        keyless.search(q="a").to_list()
    keyless.search(q="a").to_list()  # continuing: the spec's second 429


def _blocked(ctx: Ctx) -> None:
    block_ip(ctx.api.store.engine, "127.0.0.1", ctx.api.clock.now())
    try:
        ctx.client(None).search(q="a").to_list()
    finally:
        unblock_ip(ctx.api.store.engine, "127.0.0.1")


def _as_of_allowance_used(ctx: Ctx) -> None:
    account, key = ctx.account("free")
    days = [(dt.date(2024, 1, 1) + dt.timedelta(days=n)).isoformat() for n in range(51)]
    ctx.api.counters.add_distinct(account, ctx.api.clock.now().date(), "as_of", days)
    index = ctx.scenarios["index_events"]["index"]
    ctx.client(key).index(index, as_of=dt.date(2023, 6, 1)).to_list()


def _disabled(ctx: Ctx) -> None:
    account, key = ctx.account("pro")
    ctx.api.store.set_state(account, "disabled")
    ctx.client(key).usage()


def _method_not_allowed(ctx: Ctx) -> None:
    with httpx.Client(base_url=ctx.api.url) as raw:
        refused = raw.post("/v1/status")
    assert refused.status_code == 405
    ctx.replay(405, refused.json()).status()


def _replayed(code: str) -> Callable[[Ctx], None]:
    def produce(ctx: Ctx) -> None:
        error = ApiError(code)
        client = ctx.replay(error.status, error.body())
        client.holdings(ctx.scenarios["holdings"]["ticker"]).to_list()

    return produce


PRODUCERS: dict[str, Callable[[Ctx], Any]] = {
    "bad_request": lambda ctx: (
        ctx.client(ctx.account("pro")[1]).prices(ctx.plain, start="2026-02-30").to_list()
    ),
    "pagination_limit_reached": lambda ctx: (
        ctx.client(ctx.account("free")[1])
        .prices(ctx.plain, start=ctx.as_of - dt.timedelta(days=40), limit=1)
        .to_list()
    ),
    "unauthorized": lambda ctx: ctx.client("fdk_" + "0" * 32).usage(),
    "upgrade_required": lambda ctx: (
        ctx.client(ctx.account("free")[1]).insiders(ctx.scenarios["insiders"]["ticker"]).to_list()
    ),
    "account_disabled": _disabled,
    "not_found": lambda ctx: ctx.client(ctx.account("pro")[1]).prices("ZZZQQ").to_list(),
    "method_not_allowed": _method_not_allowed,
    "ambiguous_ticker": lambda ctx: (
        ctx.client(ctx.account("pro")[1])
        .prices(ctx.scenarios["ambiguous"]["ticker"], end=ctx.scenarios["ambiguous"]["date"])
        .to_list()
    ),
    "cursor_expired": lambda ctx: (
        ctx.client(ctx.account("max")[1])
        .changes(since=(ctx.as_of - dt.timedelta(days=100)).isoformat())
        .to_list()
    ),
    "burst_limit_reached": lambda ctx: _free_with(ctx, requests=40).prices(ctx.plain).to_list(),
    "daily_limit_reached": lambda ctx: _free_with(ctx, requests=100).prices(ctx.plain).to_list(),
    "rate_limit_exceeded": _keyless_after_the_hourly_limit,
    "temporarily_blocked": _blocked,
    "hourly_usage_limit": lambda ctx: _free_with(ctx, rows=100_000).prices(ctx.plain).to_list(),
    "row_limit_exceeded": lambda ctx: _free_with(ctx, rows=500_000).prices(ctx.plain).to_list(),
    "asof_limit_exceeded": _as_of_allowance_used,
    **{code: _replayed(code) for code in REPLAYED},
}


@pytest.mark.parametrize("code", sorted(ERROR_CLASSES))
def test_every_error_code_raises_its_class(code: str, ctx: Ctx) -> None:
    kind = load_errors().errors[code]
    with pytest.raises(FindataError) as raised:
        PRODUCERS[code](ctx)
    error = raised.value
    assert type(error) is ERROR_CLASSES[code]
    assert (error.status, error.code, error.STATUS, error.CODE) == (
        kind.status,
        code,
        kind.status,
        code,
    )
    assert error.body["code"] == code and error.body["status"] == kind.status
    assert error.detail == error.body["detail"]
    if kind.detail:
        assert error.detail == " ".join(kind.detail.split())
    body_extra = {k: v for k, v in error.body.items() if k not in COMMON_FIELDS}
    assert body_extra.items() <= error.extra.items()
    assert error.message == error.body.get("message")
    # the spec: retry_after_seconds on the request-limit 429s only, and never on the others
    has_wait = code in {"burst_limit_reached", "daily_limit_reached", "rate_limit_exceeded"}
    assert isinstance(error.retry_after_seconds, int) is has_wait
    if code in REPLAYED:
        assert ctx.proxy.attempts == 1  # one attempt (max_attempts=1): the body is the proxy's


def test_ambiguous_ticker_carries_candidates_and_hint(ctx: Ctx) -> None:
    ambiguous = ctx.scenarios["ambiguous"]
    client = ctx.client(ctx.account("pro")[1])
    with pytest.raises(AmbiguousTickerError) as raised:
        client.prices(ambiguous["ticker"], end=ambiguous["date"]).to_list()
    candidates = raised.value.candidates
    assert candidates is not None and set(candidates) == {ambiguous["ticker"]}
    ids = [c["entity_id"] for c in candidates[ambiguous["ticker"]]]
    assert sorted(ids) == sorted(ambiguous["entity_ids"])
    assert raised.value.hint == "pass entity_id="
    copied = pickle.loads(pickle.dumps(raised.value))  # e.g. out of a worker process
    assert type(copied) is AmbiguousTickerError
    assert (copied.status, copied.detail, copied.candidates) == (
        409,
        raised.value.detail,
        candidates,
    )
    # the fix the error names works
    assert client.prices(entity_id=ids[0], end=ambiguous["date"], limit=1).first_page.data


def test_unauthorized_texts_and_the_revocation_date(
    ctx: Ctx, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FINDATA_API_KEY", raising=False)
    with pytest.raises(UnauthorizedError) as missing:
        ctx.client(None).usage()
    assert missing.value.detail.startswith("Missing API key")
    assert missing.value.message == missing.value.detail
    assert missing.value.revoked_on is None
    _, key = ctx.account("pro")
    ctx.api.store.revoke_key(key)
    with pytest.raises(UnauthorizedError) as revoked:
        ctx.client(key).prices(ctx.plain).to_list()
    revoked_on = revoked.value.revoked_on
    assert isinstance(revoked_on, dt.date)
    assert revoked_on.isoformat() in revoked.value.detail
    assert revoked.value.extra["revoked_on"] == revoked_on.isoformat()


def test_the_page_limit_stops_an_iteration_after_the_plan_s_pages(ctx: Ctx) -> None:
    client = ctx.client(ctx.account("free")[1])
    rows = client.prices(ctx.plain, start=ctx.as_of - dt.timedelta(days=40), limit=1)
    read = []
    with pytest.raises(PaginationLimitReachedError) as raised:
        for row in rows:
            read.append(row)
    assert len(read) == 10  # Free: 10 pages per query, the first counts
    assert raised.value.body["error"] == "Pagination limit reached"


@pytest.mark.parametrize(
    "reply",
    [
        Reply.html(502),
        Reply(503, b""),
        Reply.json(502, {"message": "upstream unavailable"}),
        Reply(400, b"not json", "text/plain"),
    ],
    ids=["html-502", "empty-503", "json-without-code", "text-400"],
)
def test_a_body_that_is_not_the_api_s_still_raises(ctx: Ctx, reply: Reply) -> None:
    ctx.proxy.script(reply)
    client = ctx.client(ctx.account("pro")[1], via_proxy=True, max_attempts=1)
    with pytest.raises(FindataError) as raised:
        client.status()
    error = raised.value
    assert type(error) is FindataError
    assert (error.status, error.code) == (reply.status, None)
    assert error.detail  # the page's text, or the reason phrase
    assert ctx.proxy.attempts == 1
