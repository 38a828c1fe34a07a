"""A list endpoint's result: its rows across every page, fetched as they are read.

How the next page is asked for depends on the endpoint (spec, "Pagination"): cursor endpoints
pass back ``meta.next_cursor`` as ``cursor``; offset endpoints step ``offset`` while
``meta.has_more`` (or until ``meta.total``); the change feed passes ``meta.next_cursor`` as
``since`` while ``meta.has_more``; other endpoints answer in one page.

Each distinct text of the pages' ``warnings`` is emitted once per result as a
``FindataWarning`` and kept in ``.warnings``. The first page is kept once fetched (``meta``
reads it); iterating again fetches the later pages again rather than holding every row.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from findata_client.endpoints import EndpointInfo, Field
from findata_client.frames import to_arrow, to_pandas
from findata_client.notices import warn_body_warnings

if TYPE_CHECKING:
    import pandas
    import pyarrow

Row = dict[str, Any]
PagingKind = Literal["cursor", "offset", "since", "none"]
Fetch = Callable[[str, Mapping[str, str]], dict[str, Any]]
AsyncFetch = Callable[[str, Mapping[str, str]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Page:
    """One response of a list endpoint: its rows, ``meta``, ``warnings`` and whole body."""

    data: list[Row]
    meta: dict[str, Any]
    warnings: list[str]
    body: dict[str, Any] = field(repr=False)

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> Page:
        """The page of a response body (``data`` must be a list: a list endpoint's)."""
        data = body.get("data")
        if not isinstance(data, list):
            raise TypeError("the response's data is not a list of rows: not a list endpoint")
        return cls(data, dict(body.get("meta") or {}), list(body.get("warnings") or []), body)


def paging_kind(endpoint: EndpointInfo | None) -> PagingKind:
    """How the endpoint's pages follow each other (one page when it is unknown)."""
    if endpoint is None:
        return "none"
    return "since" if endpoint.feed else endpoint.paging


def next_query(
    kind: PagingKind, query: Mapping[str, str], page: Page, feed: str | None = None
) -> dict[str, str] | None:
    """The query of the page after ``page`` (asked for with ``query``); None after the last."""
    meta = page.meta
    if kind == "cursor":
        cursor = meta.get("next_cursor") or page.body.get("next_cursor")
        return {**query, "cursor": cursor} if cursor else None
    if kind == "offset":
        # stepping by the rows received equals stepping by limit on a full page, and can
        # never skip a row
        offset = int(query.get("offset") or 0) + len(page.data)
        more = meta.get("has_more")
        if more is None:
            more = isinstance(meta.get("total"), int) and offset < meta["total"]
        return {**query, "offset": str(offset)} if more and page.data else None
    if kind == "since":
        cursor = meta.get("next_cursor")
        return {**query, feed or "since": cursor} if meta.get("has_more") and cursor else None
    return None


class _Result:
    """What the sync and async results share: the request, the paging kind, the warnings."""

    def __init__(self, path: str, query: Mapping[str, str], endpoint: EndpointInfo | None) -> None:
        self.path = path
        self.query = dict(query)
        self.endpoint = endpoint
        self.kind = paging_kind(endpoint)
        self._first: Page | None = None
        self._seen: set[str] = set()
        self._warnings: list[str] = []

    def _page(self, body: dict[str, Any]) -> Page:
        page = Page.from_body(body)
        self._warnings += warn_body_warnings(page.warnings, self._seen)
        return page

    def _next(self, query: Mapping[str, str], page: Page) -> dict[str, str] | None:
        return next_query(self.kind, query, page, self.endpoint.feed if self.endpoint else None)

    @property
    def warnings(self) -> list[str]:
        """Each distinct warning of the pages read so far, in the order they came."""
        return list(self._warnings)

    @property
    def _fields(self) -> tuple[Field, ...]:
        return self.endpoint.fields if self.endpoint else ()


class Rows(_Result):
    """Every row of a list request, page after page (``for row in rows``), or page by page
    (``rows.pages()``); ``to_list()``, ``to_pandas()``, ``to_arrow()`` read them all."""

    def __init__(
        self, fetch: Fetch, path: str, query: Mapping[str, str], endpoint: EndpointInfo | None
    ) -> None:
        super().__init__(path, query, endpoint)
        self._fetch = fetch

    @property
    def first_page(self) -> Page:
        """The first page (fetched on first use)."""
        if self._first is None:
            self._first = self._page(self._fetch(self.path, self.query))
        return self._first

    @property
    def meta(self) -> dict[str, Any]:
        """The first page's ``meta``."""
        return self.first_page.meta

    def pages(self) -> Iterator[Page]:
        """The pages, the next fetched when the previous one was consumed."""
        query = self.query
        page = self.first_page
        while True:
            yield page
            following = self._next(query, page)
            if following is None:
                return
            query = following
            page = self._page(self._fetch(self.path, query))

    def __iter__(self) -> Iterator[Row]:
        for page in self.pages():
            yield from page.data

    def to_list(self) -> list[Row]:
        """Every row."""
        return list(self)

    def to_pandas(self) -> pandas.DataFrame:
        """Every row as a DataFrame, typed by the endpoint's contract (``frames``)."""
        return to_pandas(self.to_list(), self._fields)

    def to_arrow(self) -> pyarrow.Table:
        """Every row as an Arrow table, typed by the endpoint's contract (``frames``)."""
        return to_arrow(self.to_list(), self._fields)


class AsyncRows(_Result):
    """``Rows`` for ``AsyncClient``: ``async for row in rows``, ``async for page in
    rows.pages()``, ``await rows.first_page()``, ``await rows.to_list()`` (``to_pandas``,
    ``to_arrow``)."""

    def __init__(
        self, fetch: AsyncFetch, path: str, query: Mapping[str, str], endpoint: EndpointInfo | None
    ) -> None:
        super().__init__(path, query, endpoint)
        self._fetch = fetch

    async def first_page(self) -> Page:
        """The first page (fetched on first use)."""
        if self._first is None:
            self._first = self._page(await self._fetch(self.path, self.query))
        return self._first

    @property
    def meta(self) -> dict[str, Any]:
        """The first page's ``meta`` (``await first_page()``, or read a row, before)."""
        if self._first is None:
            raise RuntimeError("no page fetched yet: await rows.first_page() first")
        return self._first.meta

    async def pages(self) -> AsyncIterator[Page]:
        """The pages, the next fetched when the previous one was consumed."""
        query = self.query
        page = await self.first_page()
        while True:
            yield page
            following = self._next(query, page)
            if following is None:
                return
            query = following
            page = self._page(await self._fetch(self.path, query))

    async def __aiter__(self) -> AsyncIterator[Row]:
        async for page in self.pages():
            for row in page.data:
                yield row

    async def to_list(self) -> list[Row]:
        """Every row."""
        return [row async for row in self]

    async def to_pandas(self) -> pandas.DataFrame:
        """Every row as a DataFrame, typed by the endpoint's contract (``frames``)."""
        return to_pandas(await self.to_list(), self._fields)

    async def to_arrow(self) -> pyarrow.Table:
        """Every row as an Arrow table, typed by the endpoint's contract (``frames``)."""
        return to_arrow(await self.to_list(), self._fields)
