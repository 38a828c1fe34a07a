"""A list endpoint's result: its rows across every page, fetched as they are read.

How the next page is asked for depends on the endpoint (spec, "Pagination"): cursor endpoints
pass back ``meta.next_cursor`` as ``cursor``; offset endpoints step ``offset`` while
``meta.has_more`` (or until ``meta.total``); the change feed passes ``meta.next_cursor`` as
``since`` while ``meta.has_more``; other endpoints answer in one page.

Each distinct text of the pages' ``warnings`` is emitted once per result as a
``FindataWarning`` and kept in ``.warnings``. The first page is kept once fetched (``meta``
reads it); iterating again fetches the later pages again rather than holding every row.

Reading every row (``to_list()``, ``to_pandas()``, ``to_arrow()``, or awaiting an ``AsyncRows``)
throws nothing fetched away: an error that stops the paging carries the rows fetched before it
(``error.rows``), and when the plan's page limit stopped it, ``allow_partial=True`` returns them
instead (with a ``PartialResultWarning``); the page-limit error says how to narrow the query.
Each page fetched is logged (logger ``findata_client.results``, INFO).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from findata_client.base_errors import FindataConnectionError, FindataError
from findata_client.endpoints import EndpointInfo
from findata_client.fetched import RowList, printed
from findata_client.narrowing import page_limit_note
from findata_client.notices import warn_body_warnings, warn_partial_result
from findata_client.params import shown_request

if TYPE_CHECKING:
    import pandas
    import pyarrow

Row = dict[str, Any]
PagingKind = Literal["cursor", "offset", "since", "none"]
Fetch = Callable[[str, Mapping[str, str]], dict[str, Any]]
AsyncFetch = Callable[[str, Mapping[str, str]], Awaitable[dict[str, Any]]]
#: what stops a result's paging: an error response, or no answer
Stop = FindataError | FindataConnectionError
PAGE_LIMIT = "pagination_limit_reached"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Page:
    """One response of a list endpoint: its rows, ``meta``, ``warnings`` and whole body."""

    data: list[Row] = field(repr=False)
    meta: dict[str, Any]
    warnings: list[str]
    body: dict[str, Any] = field(repr=False)

    def __repr__(self) -> str:
        return printed(
            f"Page of {len(self.data):,} rows, meta={self.meta!r}", self.data, len(self.data)
        )

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
    """What the sync and async results share: the request, the paging kind, the warnings, and
    what a walk over the pages does with each page and with an error that stops it."""

    def __init__(self, path: str, query: Mapping[str, str], endpoint: EndpointInfo | None) -> None:
        self.path = path
        self.query = dict(query)
        self.endpoint = endpoint
        self.kind = paging_kind(endpoint)
        self._first: Page | None = None
        self._seen: set[str] = set()
        self._warnings: list[str] = []

    def _page(self, body: dict[str, Any], number: int, before: int) -> Page:
        """The page of a body just fetched (its warnings emitted, its arrival logged)."""
        page = Page.from_body(body)
        self._warnings += warn_body_warnings(page.warnings, self._seen)
        log.info(
            "%s: page %d, %d rows (%d so far)",
            self.request,
            number,
            len(page.data),
            before + len(page.data),
        )
        return page

    def _next(self, query: Mapping[str, str], page: Page) -> dict[str, str] | None:
        return next_query(self.kind, query, page, self.endpoint.feed if self.endpoint else None)

    @property
    def request(self) -> str:
        """The request, as logs and printed results name it (its path and first query)."""
        return shown_request(self.path, self.query)

    @property
    def warnings(self) -> list[str]:
        """Each distinct warning of the pages read so far, in the order they came."""
        return list(self._warnings)

    def _printed(self, kind: str) -> str:
        name = self.endpoint.name if self.endpoint else "rows"
        head = f"{kind} of {name} {self.request}"
        first = self._first
        if first is None:
            return printed(f"{head}: not fetched yet", [], None)
        count = len(first.data)
        total = first.meta.get("total")
        if self._next(self.query, first) is None:
            return printed(f"{head}: {count:,} rows", first.data, count)
        if isinstance(total, int):
            return printed(
                f"{head}: {total:,} rows, {count:,} on the first page", first.data, total
            )
        return printed(f"{head}: {count:,} rows on the first page, more to fetch", first.data, None)

    def _held(self, rows: list[Row], pages: int, complete: bool) -> RowList:
        meta = self._first.meta if self._first else {}
        return RowList(
            rows,
            endpoint=self.endpoint,
            meta=meta,
            warnings=self._warnings,
            pages=pages,
            complete=complete,
        )

    def _stopped(self, error: Stop, walk: _Walk) -> None:
        """A later page failed: a page limit's error says what was fetched and how to narrow."""
        if isinstance(error, FindataError) and error.code == PAGE_LIMIT:
            error.add_note(
                page_limit_note(
                    self.endpoint, self.path, walk.query, walk.rows, walk.pages, walk.last_row
                )
            )

    def _partial(self, error: Stop, rows: list[Row], pages: int, allow_partial: bool) -> RowList:
        """Reading every row stopped at ``error``: it keeps the rows fetched; with
        ``allow_partial`` a page limit returns them instead of raising."""
        error.rows = self._held(rows, pages, complete=False)
        if not (allow_partial and isinstance(error, FindataError) and error.code == PAGE_LIMIT):
            raise error
        warn_partial_result(
            f"{error.detail} The result holds the {len(rows):,} rows of the {pages} pages "
            "fetched before it."
        )
        return error.rows


class _Walk:
    """Where one pass over a result's pages is: the query of the page in hand, how many pages
    and rows it passed, the last row."""

    def __init__(self, result: _Result) -> None:
        self.result = result
        self.query: dict[str, str] = dict(result.query)
        self.pages = 0
        self.rows = 0
        self.last_row: Row | None = None

    def passed(self, page: Page) -> None:
        """``page`` was handed out."""
        self.pages += 1
        self.rows += len(page.data)
        if page.data:
            self.last_row = page.data[-1]

    def following(self, page: Page) -> dict[str, str] | None:
        """The query of the page after ``page``, now the walk's; None after the last."""
        query = self.result._next(self.query, page)
        if query is not None:
            self.query = query
        return query

    def fetched(self, body: dict[str, Any]) -> Page:
        """The page of the body fetched with the walk's query."""
        return self.result._page(body, self.pages + 1, self.rows)


class Rows(_Result):
    """Every row of a list request, page after page (``for row in rows``), or page by page
    (``rows.pages()``); ``to_list()``, ``to_pandas()``, ``to_arrow()`` read them all. Printed,
    it shows its count and first rows."""

    def __init__(
        self, fetch: Fetch, path: str, query: Mapping[str, str], endpoint: EndpointInfo | None
    ) -> None:
        super().__init__(path, query, endpoint)
        self._fetch = fetch

    @property
    def first_page(self) -> Page:
        """The first page (fetched on first use)."""
        if self._first is None:
            self._first = self._page(self._fetch(self.path, self.query), 1, 0)
        return self._first

    @property
    def meta(self) -> dict[str, Any]:
        """The first page's ``meta``."""
        return self.first_page.meta

    def pages(self) -> Iterator[Page]:
        """The pages, the next fetched when the previous one was consumed."""
        walk = _Walk(self)
        page = self.first_page
        while True:
            walk.passed(page)
            yield page
            query = walk.following(page)
            if query is None:
                return
            try:
                page = walk.fetched(self._fetch(self.path, query))
            except (FindataError, FindataConnectionError) as error:
                self._stopped(error, walk)
                raise

    def __iter__(self) -> Iterator[Row]:
        for page in self.pages():
            yield from page.data

    def to_list(self, *, allow_partial: bool = False) -> RowList:
        """Every row (a list). An error that stops the paging keeps the rows fetched before it
        (``error.rows``); ``allow_partial``: when the plan's page limit stopped it, those rows
        are returned (``complete`` False) instead, with a ``PartialResultWarning``."""
        rows: list[Row] = []
        pages = 0
        try:
            for page in self.pages():
                rows += page.data
                pages += 1
        except (FindataError, FindataConnectionError) as error:
            return self._partial(error, rows, pages, allow_partial)
        return self._held(rows, pages, complete=True)

    def to_pandas(
        self, *, date_index: bool = False, allow_partial: bool = False
    ) -> pandas.DataFrame:
        """Every row as a DataFrame, typed by the endpoint's contract (``frames``);
        ``date_index``: indexed by the endpoint's date column; ``allow_partial``: as
        ``to_list``."""
        return self.to_list(allow_partial=allow_partial).to_pandas(date_index=date_index)

    def to_arrow(self, *, allow_partial: bool = False) -> pyarrow.Table:
        """Every row as an Arrow table, typed by the endpoint's contract (``frames``);
        ``allow_partial``: as ``to_list``."""
        return self.to_list(allow_partial=allow_partial).to_arrow()

    def __repr__(self) -> str:
        return self._printed("Rows")


class AsyncRows(_Result):
    """``Rows`` for ``AsyncClient``: ``await rows`` for every row (a ``RowList``; an error
    response raises there, the first page's as soon as it comes), ``await rows.to_pandas()``
    (``to_arrow``, ``to_list``), or ``async for row in rows`` / ``async for page in
    rows.pages()`` to read as the pages come."""

    def __init__(
        self, fetch: AsyncFetch, path: str, query: Mapping[str, str], endpoint: EndpointInfo | None
    ) -> None:
        super().__init__(path, query, endpoint)
        self._fetch = fetch

    async def first_page(self) -> Page:
        """The first page (fetched on first use)."""
        if self._first is None:
            self._first = self._page(await self._fetch(self.path, self.query), 1, 0)
        return self._first

    @property
    def meta(self) -> dict[str, Any]:
        """The first page's ``meta`` (``await first_page()``, or read a row, before)."""
        if self._first is None:
            raise RuntimeError("no page fetched yet: await rows.first_page() first")
        return self._first.meta

    async def pages(self) -> AsyncIterator[Page]:
        """The pages, the next fetched when the previous one was consumed."""
        walk = _Walk(self)
        page = await self.first_page()
        while True:
            walk.passed(page)
            yield page
            query = walk.following(page)
            if query is None:
                return
            try:
                page = walk.fetched(await self._fetch(self.path, query))
            except (FindataError, FindataConnectionError) as error:
                self._stopped(error, walk)
                raise

    async def __aiter__(self) -> AsyncIterator[Row]:
        async for page in self.pages():
            for row in page.data:
                yield row

    def __await__(self) -> Generator[Any, None, RowList]:
        return self.to_list().__await__()

    async def to_list(self, *, allow_partial: bool = False) -> RowList:
        """Every row (``Rows.to_list``)."""
        rows: list[Row] = []
        pages = 0
        try:
            async for page in self.pages():
                rows += page.data
                pages += 1
        except (FindataError, FindataConnectionError) as error:
            return self._partial(error, rows, pages, allow_partial)
        return self._held(rows, pages, complete=True)

    async def to_pandas(
        self, *, date_index: bool = False, allow_partial: bool = False
    ) -> pandas.DataFrame:
        """Every row as a DataFrame (``Rows.to_pandas``)."""
        return (await self.to_list(allow_partial=allow_partial)).to_pandas(date_index=date_index)

    async def to_arrow(self, *, allow_partial: bool = False) -> pyarrow.Table:
        """Every row as an Arrow table (``Rows.to_arrow``)."""
        return (await self.to_list(allow_partial=allow_partial)).to_arrow()

    def __repr__(self) -> str:
        return self._printed("AsyncRows")
