"""``AsyncClient`` against the real server: the same answers as ``Client`` (rows, pages, tables,
bodies), a result awaited to every row, errors raised at the await of the first page, retries
through the fault proxy with an async ``sleep``, and a 429 waited out with an injected clock."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from findata_client import AsyncClient, Client, FindataConnectionError, RowList
from findata_client.errors import (
    BurstLimitReachedError,
    CoverageUnavailableError,
    CursorExpiredError,
    NotFoundError,
)
from tests.api.server import RunningApi
from tests.clients.clock_server import (
    TO_NEXT_HOUR,
    MovingSleep,
    clock_server,
    ten_fifteen,
    use,
)
from tests.clients.fault_proxy import HANG, FaultProxy, Reply, fault_proxy

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def key(api: RunningApi) -> str:
    return api.new_key("max").key


@pytest.fixture(scope="module")
def proxy(api: RunningApi) -> Iterator[FaultProxy]:
    with fault_proxy(api.url) as running:
        yield running


class AsyncSleeps(list[float]):
    """An async ``sleep`` that records instead of waiting."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


async def test_the_same_answers_as_the_sync_client(
    api: RunningApi, key: str, scenarios: dict[str, Any]
) -> None:
    plain = scenarios["plain"]["ticker"]
    window = {"start": "2025-01-01", "end": "2025-03-31"}
    index = scenarios["index_events"]["index"]
    with Client(key, api.url) as sync:
        rows = sync.prices(plain, **window).to_list()
        roster = sync.index(index).to_pandas()
        changes = sync.changes(limit=300).to_list()
    async with AsyncClient(key, api.url) as client:
        prices = client.prices(plain, limit=10, **window)
        with pytest.raises(RuntimeError):
            prices.meta  # noqa: B018  # nothing fetched yet
        assert [row async for row in prices] == rows
        assert prices.meta["limit"] == 10
        pages = [page.data async for page in prices.pages()]
        assert len(pages) > 3 and [row for page in pages for row in page] == rows
        assert (await client.prices(plain, **window).to_list()) == rows
        assert (await client.index(index).to_pandas()).equals(roster)
        table = await client.prices(plain, **window).to_arrow()
        assert table.num_rows == len(rows) and str(table.schema.field("date").type) == "date32[day]"
        with Client(key, api.url) as sync:
            assert await client.usage() == sync.usage()  # reading usage counts nothing
        assert (await client.status())["status"] == "ok"
        resolved = await client.resolve(plain, date=dt.date.fromisoformat(scenarios["as_of"]))
        assert plain in resolved["data"]
        assert (await client.get(f"/v1/prices/{plain}", window))["data"] == rows
        assert await client.paginate(f"/v1/prices/{plain}", window).to_list() == rows
        assert await client.changes(limit=300).to_list() == changes


async def test_a_result_is_awaited_to_every_row(
    api: RunningApi, key: str, scenarios: dict[str, Any]
) -> None:
    plain = scenarios["plain"]["ticker"]
    window = {"start": "2025-01-01", "end": "2025-03-31"}
    with Client(key, api.url) as sync:
        expected = sync.prices(plain, **window).to_list()
        frame = sync.prices(plain, **window).to_pandas(date_index=True)
        roster = sync.index(scenarios["index_events"]["index"]).to_list()
    async with AsyncClient(key, api.url) as client:
        rows = await client.prices(plain, limit=10, **window)
        assert isinstance(rows, RowList) and rows == expected
        assert rows.pages > 3 and rows.complete and rows.meta["limit"] == 10
        assert str(rows).startswith(f"<RowList of prices: {len(expected):,} rows from")
        assert (await client.index(scenarios["index_events"]["index"])) == roster
        assert (await client.prices(plain, **window).to_pandas(date_index=True)).equals(frame)
        result = client.prices(plain, limit=10, **window)
        assert repr(result).endswith(": not fetched yet>")
        assert [row async for row in result] == expected  # async iteration as before
        assert "rows on the first page, more to fetch>" in repr(result).splitlines()[0]


async def test_errors_raise(api: RunningApi, key: str, scenarios: dict[str, Any]) -> None:
    sent: list[httpx.Request] = []

    async def record(request: httpx.Request) -> None:
        sent.append(request)

    http = httpx.AsyncClient(event_hooks={"request": [record]})
    async with AsyncClient(key, api.url, http_client=http) as client:
        # the first page's error raises at the await, as the sync call raises at once
        with pytest.raises(NotFoundError):
            await client.prices("ZZZQQ")
        assert len(sent) == 1
        with pytest.raises(CursorExpiredError):
            await client.changes(since="2000-01-01")
        with pytest.raises(NotFoundError):
            async for _ in client.prices("ZZZQQ"):
                pass
        with pytest.raises(NotFoundError):
            await client.prices("ZZZQQ").to_pandas()
        with pytest.raises(CursorExpiredError):
            await client.changes(since="2000-01-01").first_page()
    await http.aclose()


async def test_retries_with_an_async_sleep(proxy: FaultProxy, key: str) -> None:
    sleeps = AsyncSleeps()
    async with AsyncClient(key, proxy.url, sleep=sleeps, timeout=0.25) as client:
        proxy.script(Reply.html(502), Reply.html(503))
        assert (await client.status())["status"] == "ok"
        assert proxy.attempts == 3 and len(sleeps) == 2
        assert 0.5 <= sleeps[0] < 0.75 and 1.0 <= sleeps[1] < 1.5
        coverage = Reply.json(
            503,
            {
                "error": "coverage_unavailable",
                "code": "coverage_unavailable",
                "status": 503,
                "detail": "Holdings coverage is not available",
            },
        )
        proxy.script(coverage, coverage, coverage)
        with pytest.raises(CoverageUnavailableError):
            await client.holdings("ANY").to_list()
        assert proxy.attempts == 3
        proxy.script(HANG, HANG, HANG)
        with pytest.raises(FindataConnectionError):
            await client.status()
        assert proxy.attempts == 3
    plain: list[float] = []
    async with AsyncClient(key, proxy.url, sleep=plain.append) as client:  # a plain callable
        proxy.script(Reply.html(500))
        await client.status()
        assert len(plain) == 1


@pytest.fixture(scope="module")
def clock_api(published_home: Path) -> Iterator[RunningApi]:
    with clock_server(published_home) as running:
        yield running


async def test_a_429_waited_out(clock_api: RunningApi, scenarios: dict[str, Any]) -> None:
    clock_api.clock.set(ten_fifteen())
    free = clock_api.new_key("free")
    use(clock_api, free.account.id, requests=40)
    moving = MovingSleep(clock_api.clock)

    async def sleep(seconds: float) -> None:
        moving(seconds)

    plain = scenarios["plain"]["ticker"]
    async with AsyncClient(free.key, clock_api.url, clock=clock_api.clock.now) as impatient:
        with pytest.raises(BurstLimitReachedError):
            await impatient.prices(
                plain, start=ten_fifteen().date() - dt.timedelta(days=7), limit=1
            ).first_page()
    async with AsyncClient(
        free.key, clock_api.url, wait_on_rate_limit=True, clock=clock_api.clock.now, sleep=sleep
    ) as client:
        page = await client.prices(
            plain, start=ten_fifteen().date() - dt.timedelta(days=7), limit=1
        ).first_page()
    assert page.data and moving == [TO_NEXT_HOUR]
    clock_api.clock.set(ten_fifteen())
