"""What a result gives beyond its rows, against the real server: a query stopped by the plan's
page limit keeps every row it fetched (on the error, and through ``to_list``/``to_pandas``/
``to_arrow`` with ``allow_partial=True``) and its error says how to narrow; any other error that
stops the paging keeps them too; results print their count and first rows; a frame can be
indexed by the endpoint's date column."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from findata.api.errors import ApiError
from findata.contracts.plans import plan
from findata_client import Client, PartialResultWarning, RowList
from findata_client.errors import PaginationLimitReachedError, QueryTimeoutError
from tests.api.server import RunningApi
from tests.clients.fault_proxy import FaultProxy, Reply, fault_proxy

#: a page size that reaches the Pro plan's page limit on the demo's three-security query
SMALL_PAGES = 20


@pytest.fixture(scope="module")
def key(api: RunningApi) -> str:
    """Redistribution: 200 pages per query."""
    return api.new_key("redistribution").key


@pytest.fixture(scope="module")
def client(api: RunningApi, key: str) -> Iterator[Client]:
    with Client(key, api.url) as made:
        yield made


@pytest.fixture(scope="module")
def proxy(api: RunningApi) -> Iterator[FaultProxy]:
    with fault_proxy(api.url) as running:
        yield running


def _three_securities(scenarios: dict[str, Any]) -> list[str]:
    return [scenarios["plain"]["ticker"], *scenarios["share_classes"]["class_tickers"]]


def test_a_page_limit_keeps_the_rows_it_fetched(
    api: RunningApi, client: Client, scenarios: dict[str, Any]
) -> None:
    tickers = _three_securities(scenarios)
    every_row = client.prices(tickers, limit=5000).to_list()
    pages = plan("pro").pages_per_query
    kept = SMALL_PAGES * pages
    assert len(every_row) > kept  # more than the Pro plan's pages reach
    with Client(api.new_key("pro").key, api.url) as pro:
        with pytest.raises(PaginationLimitReachedError) as raised:
            pro.prices(tickers, limit=SMALL_PAGES).to_list()
        error = raised.value
        assert isinstance(error.rows, RowList) and error.rows == every_row[:kept]
        assert (error.rows.pages, error.rows.complete) == (pages, False)
        assert error.rows.meta["limit"] == SMALL_PAGES
        assert "Narrow the query" in str(error)  # the server's detail
        (note,) = error.__notes__
        assert f"{kept:,} rows of {pages} pages were fetched before the limit" in note
        assert "allow_partial=True" in note
        held = f"pass limit=5000 (the most a page of prices holds; these pages held {SMALL_PAGES})"
        assert held in note
        assert "a shorter date range (start/end; now the whole history)" in note
        assert "fewer tickers or entity ids (now 3)" in note
        last = every_row[kept - 1]
        assert f"end at entity_id {last['entity_id']}, date {last['date']}" in note

        # with the opt-in, the tables hold what was fetched; a warning says it is partial
        with pytest.warns(PartialResultWarning, match="Pagination limit reached") as warned:
            frame = pro.prices(tickers, limit=SMALL_PAGES).to_pandas(allow_partial=True)
            table = pro.prices(tickers, limit=SMALL_PAGES).to_arrow(allow_partial=True)
            rows = pro.prices(tickers, limit=SMALL_PAGES).to_list(allow_partial=True)
        assert all(w.filename == __file__ for w in warned)
        assert len(frame) == table.num_rows == kept and rows == every_row[:kept]
        assert frame["entity_id"].tolist() == [row["entity_id"] for row in every_row[:kept]]
        assert not rows.complete
        # the narrowing the note names gets past the limit
        bigger = pro.prices(tickers, limit=5000).to_list()
        assert bigger == every_row and bigger.complete


def test_another_error_that_stops_paging_keeps_the_rows_too(
    proxy: FaultProxy, key: str, client: Client, scenarios: dict[str, Any]
) -> None:
    window = {"start": "2025-01-01", "end": "2025-03-31", "limit": 10}
    plain = scenarios["plain"]["ticker"]
    every_row = client.prices(plain, **window).to_list()
    timeout = Reply.json(504, ApiError("query_timeout").body())
    with Client(key, proxy.url) as through:
        proxy.script("pass", "pass", timeout)
        with pytest.raises(QueryTimeoutError) as raised:
            # the opt-in is for the page limit only: a timeout still raises
            through.prices(plain, **window).to_pandas(allow_partial=True)
    assert raised.value.rows == every_row[:20] and raised.value.rows.pages == 2


def test_results_print_their_count_and_first_rows(
    client: Client, scenarios: dict[str, Any]
) -> None:
    plain = scenarios["plain"]["ticker"]
    result = client.prices(plain, start="2025-01-01", end="2025-03-31", limit=5)
    lines = repr(result).splitlines()
    request = f"/v1/prices/{plain}?start=2025-01-01&end=2025-03-31&limit=5"
    assert lines[0] == f"<Rows of prices {request}: 5 rows on the first page, more to fetch>"
    first = result.first_page.data
    assert len(lines) == 4  # three rows shown
    for line, row in zip(lines[1:], first, strict=False):
        assert line.startswith(f"  {{'entity_id': {row['entity_id']}, 'ticker': '{plain}'")
        assert f"'date': '{row['date']}'" in line and line.endswith(", ...}")
    rows = result.to_list()
    printed = str(rows).splitlines()
    assert printed[0] == f"<RowList of prices: {len(rows):,} rows from {rows.pages} page(s)>"
    assert printed[-1] == f"  ... {len(rows) - 3:,} more" and len(printed) == 5
    searched = client.search(limit=5)
    total = searched.meta["total"]
    assert f"/v1/search?limit=5: {total:,} rows, 5 on the first page>" in repr(searched)
    week = client.prices(plain, start="2025-01-06", end="2025-01-10")
    count = len(week.first_page.data)
    assert repr(week).splitlines()[0].endswith(f"2025-01-10: {count} rows>")
    assert repr(week.first_page).startswith(f"<Page of {count} rows, meta={{")


def test_a_date_indexed_frame(client: Client, scenarios: dict[str, Any]) -> None:
    plain = scenarios["plain"]["ticker"]
    result = client.prices(plain, start="2025-01-01", end="2025-03-31")
    flat = result.to_pandas()
    frame = result.to_pandas(date_index=True)
    assert isinstance(frame.index, pd.DatetimeIndex) and frame.index.name == "date"
    assert list(frame.index) == list(flat["date"]) and "date" not in frame.columns
    assert frame["close"].tolist() == flat["close"].tolist()
    first = result.first_page.data[0]
    assert frame.loc[pd.Timestamp(first["date"]), "close"] == first["close"]
    fundamentals = client.fundamentals(plain).to_pandas(date_index=True)
    assert fundamentals.index.name == "period_end"
    assert isinstance(fundamentals.index, pd.DatetimeIndex)
    with pytest.raises(ValueError, match="index rows have no date"):
        client.index(scenarios["index_events"]["index"]).to_pandas(date_index=True)
