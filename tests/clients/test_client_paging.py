"""Paging results against the real server: iterating a result gives exactly the rows of a manual
walk over the same pages (cursor endpoints, the counted envelope, offset endpoints, the change
feed through ``since``), page by page too; the first page is fetched once; each distinct body
warning is emitted once per result; Arrow tables and DataFrames are typed by the contracts."""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Iterator
from typing import Any

import httpx
import pyarrow as pa
import pytest

from findata_client import Client, FindataWarning
from findata_client.spec import ENDPOINTS
from tests.api.endpoints.api_calls import get, ok_body
from tests.api.server import RunningApi

ARROW = {
    "BIGINT": pa.int64(),
    "INTEGER": pa.int32(),
    "DOUBLE": pa.float64(),
    "BOOLEAN": pa.bool_(),
    "DATE": pa.date32(),
    "VARCHAR": pa.string(),
}


@pytest.fixture(scope="module")
def key(api: RunningApi) -> str:
    """Redistribution: 200 pages per query, room for small pages."""
    return api.new_key("redistribution").key


@pytest.fixture(scope="module")
def sent() -> list[httpx.Request]:
    """Every request the module's client sent."""
    return []


@pytest.fixture(scope="module")
def client(api: RunningApi, key: str, sent: list[httpx.Request]) -> Iterator[Client]:
    http = httpx.Client(event_hooks={"request": [sent.append]})
    with Client(key, api.url, http_client=http) as made:
        yield made
    http.close()


def _cursor_walk(api: RunningApi, key: str, path: str, **params: Any) -> list[dict[str, Any]]:
    bodies, cursor = [], None
    while True:
        body = ok_body(get(api, key, path, **params, **({"cursor": cursor} if cursor else {})))
        bodies.append(body)
        cursor = body["meta"]["next_cursor"]
        if cursor is None:
            return bodies


def _offset_walk(
    api: RunningApi, key: str, path: str, limit: int, **params: Any
) -> list[dict[str, Any]]:
    bodies, offset = [], 0
    while True:
        body = ok_body(get(api, key, path, limit=limit, offset=offset, **params))
        bodies.append(body)
        if not body["meta"]["has_more"]:
            return bodies
        offset += limit


def _rows(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [row for body in bodies for row in body["data"]]


def test_cursor_pages_equal_a_manual_walk(
    client: Client, api: RunningApi, key: str, scenarios: dict[str, Any]
) -> None:
    tickers = [scenarios["plain"]["ticker"], *scenarios["share_classes"]["class_tickers"]]
    window = {"start": "2025-01-01", "end": "2025-03-31"}
    bodies = _cursor_walk(api, key, f"/v1/prices/{','.join(tickers)}", limit=17, **window)
    assert len(bodies) > 5
    result = client.prices(tickers, limit=17, **window)
    assert [page.data for page in result.pages()] == [body["data"] for body in bodies]
    assert [page.meta for page in result.pages()] == [body["meta"] for body in bodies]
    assert list(result) == _rows(bodies)
    assert result.meta == bodies[0]["meta"]


def test_the_counted_envelope_pages_too(
    client: Client, api: RunningApi, key: str, scenarios: dict[str, Any]
) -> None:
    ticker = scenarios["insiders"]["ticker"]
    bodies = _cursor_walk(api, key, f"/v1/insiders/{ticker}", limit=7)
    assert len(bodies) > 3 and all("next_cursor" in body for body in bodies)
    assert client.insiders(ticker, limit=7).to_list() == _rows(bodies)


def test_offset_pages_equal_a_manual_walk(
    client: Client, api: RunningApi, key: str, scenarios: dict[str, Any]
) -> None:
    searched = _offset_walk(api, key, "/v1/search", 23)
    assert len(searched) > 3
    result = client.search(limit=23)
    assert [page.data for page in result.pages()] == [body["data"] for body in searched]
    assert len(result.to_list()) == searched[0]["meta"]["total"]
    index = scenarios["index_events"]["index"]
    events = _offset_walk(api, key, f"/v1/index/{index}/events", 10)
    assert len(events) > 3
    assert client.index_events(index, limit=10).to_list() == _rows(events)
    # a later start: the offset given is where the walk begins
    assert client.index_events(index, limit=10, offset=20).to_list() == _rows(events)[20:]


def test_the_change_feed_is_read_on_through_since(
    api: RunningApi, scenarios: dict[str, Any]
) -> None:
    key = api.new_key("max").key
    bodies, since = [], None
    while True:
        body = ok_body(
            get(api, key, "/v1/changes", limit=97, **({"since": since} if since else {}))
        )
        bodies.append(body)
        since = body["meta"]["next_cursor"]
        if not body["meta"]["has_more"]:
            break
    assert len(bodies) > 3
    with Client(key, api.url) as client:
        feed = client.changes(limit=97)
        assert [page.data for page in feed.pages()] == [body["data"] for body in bodies]
        assert client.paginate("/v1/changes", {"limit": 97}).to_list() == _rows(bodies)
        start = client.prices(scenarios["plain"]["ticker"], limit=1).meta["change_cursor"]
        assert client.changes(since=start).to_list() == []  # nothing after the data's version


def test_the_first_page_is_fetched_by_the_call_and_once(
    client: Client, sent: list[httpx.Request], scenarios: dict[str, Any]
) -> None:
    sent.clear()
    result = client.prices(scenarios["plain"]["ticker"], start="2025-01-01", limit=100)
    assert len(sent) == 1  # the call asks for the first page (an error raises at the call)
    first = result.first_page
    assert result.meta == first.meta and result.first_page is first
    assert len(sent) == 1
    rows = result.to_list()
    pages = len(sent)
    assert pages > 2 and rows[:100] == first.data
    assert result.to_list() == rows  # read again: the later pages are asked for again
    assert len(sent) == 2 * pages - 1
    assert all(request.headers["x-api-key"] for request in sent)


def test_each_warning_once_per_result(client: Client, scenarios: dict[str, Any]) -> None:
    plain = scenarios["plain"]["ticker"]
    text = "Unknown field ignored: 'bogus'"
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = client.prices(plain, fields="close,bogus", start="2025-01-01", limit=5)
        rows = result.to_list()
        assert len(rows) > 20  # many pages, each with the warning
        again = client.prices(plain, fields=["close", "bogus"], start="2025-06-01", limit=50)
        again.to_list()
    assert [str(w.message) for w in seen] == [text, text]
    assert all(w.category is FindataWarning and w.filename == __file__ for w in seen)
    assert result.warnings == [text] and again.warnings == [text]
    with pytest.warns(FindataWarning, match="after today"):
        client.resolve(plain, date="2999-01-01")


def _assert_typed(table: pa.Table, endpoint: str) -> None:
    fields = ENDPOINTS[endpoint].field_types
    for column in table.schema:
        field = fields.get(column.name)
        if field is not None and field.type is not None:
            assert column.type == ARROW[field.type], (endpoint, column)


def test_arrow_tables_are_typed_by_the_contracts(client: Client, scenarios: dict[str, Any]) -> None:
    prices = client.prices(scenarios["plain"]["ticker"], start="2025-01-01", end="2025-02-01")
    table = prices.to_arrow()
    assert table.num_rows == len(prices.to_list())
    expected = {
        "entity_id": pa.int64(), "date": pa.date32(), "close": pa.float64(),
        "volume": pa.int64(), "ticker": pa.string(), "return_daily": pa.float64(),
    }  # fmt: skip
    assert {name: table.schema.field(name).type for name in expected} == expected
    assert table.column("date")[0].as_py() == dt.date.fromisoformat(
        prices.first_page.data[0]["date"]
    )
    _assert_typed(table, "prices")
    insiders = client.insiders(scenarios["insiders"]["ticker"]).to_arrow()
    assert insiders.schema.field("is_derivative").type == pa.bool_()
    _assert_typed(insiders, "insiders")
    roster = client.index(scenarios["index_events"]["index"], as_of="2024-06-03").to_arrow()
    assert roster.schema.field("removed_date").type == pa.date32()  # nulls and dates
    _assert_typed(roster, "index")
    # fields no dataset contract types are inferred
    feed = client.changes(limit=5000).to_arrow()
    assert feed.schema.field("rows").type == pa.int64()
    assert feed.schema.field("id").type == pa.string()


def test_dataframes_are_typed_by_the_contracts(client: Client, scenarios: dict[str, Any]) -> None:
    frame = client.prices(scenarios["plain"]["ticker"], start="2025-01-01", end="2025-02-01")
    df = frame.to_pandas()
    assert len(df) == len(frame.to_list())
    assert str(df["date"].dtype) == "datetime64[ns]"
    assert str(df["entity_id"].dtype) == "int64"  # never null in the contract
    assert str(df["shares_outstanding"].dtype) == "Int64"  # may be null: pandas' nullable int
    assert str(df["close"].dtype) == "float64"
    assert str(df["ticker"].dtype) == "string"
    holdings = client.holdings(scenarios["holdings"]["ticker"], limit=5000).to_pandas()
    assert str(holdings["is_current"].dtype) == "bool"
    assert str(holdings["line_number"].dtype) == "int32"
    assert str(holdings["report_date"].dtype) == "datetime64[ns]"


def test_an_empty_result_has_the_endpoint_s_typed_columns(
    client: Client, scenarios: dict[str, Any]
) -> None:
    empty = client.prices(scenarios["plain"]["ticker"], start="2025-01-04", end="2025-01-05")
    assert empty.to_list() == []  # a weekend
    table = empty.to_arrow()
    assert table.num_rows == 0
    assert table.column_names == [f.name for f in ENDPOINTS["prices"].fields]
    _assert_typed(table, "prices")
    df = empty.to_pandas()
    assert list(df.columns) == table.column_names and len(df) == 0
    assert str(df["date"].dtype) == "datetime64[ns]"
