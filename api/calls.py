"""What an endpoint handler gets and gives back: ``EndpointCall`` and ``EndpointAnswer`` for a
data endpoint, ``ServiceCall`` and ``ServiceAnswer`` for a service endpoint (status, usage).

Handlers live in ``api/endpoints/<contract name>.py`` as ``handle(call) -> answer``; the
request path (``api/data_requests.py``, ``api/service_requests.py``) does everything around
them: keys, validation, plan gates, subjects, paging, the envelope and headers.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import orjson
import sqlalchemy as sa
from sqlglot import exp

from findata.accounts.counters import UsageCounters
from findata.accounts.store import KeyOwner
from findata.api.errors import BadRequest
from findata.api.params import RequestParams
from findata.api.published import Lease, PublishedData, Version
from findata.api.query import Binder, fetch_dicts, fetch_dicts_of_sql, slot
from findata.api.resolution import Resolution, SubjectDirectory
from findata.api.row_store import RowStore
from findata.contracts.endpoints import EndpointContract
from findata.contracts.plans import Plan


@dataclass(frozen=True)
class PageWindow:
    """The rows this page may hold: from ``offset``, at most ``limit``; ``number`` counts from 1."""

    offset: int
    limit: int
    number: int


@dataclass
class EndpointCall:
    """One validated request, ready for its handler."""

    contract: EndpointContract
    params: RequestParams
    owner: KeyOwner | None
    plan: Plan | None
    path: dict[str, str]
    lease: Lease  # the version held for this request; its DuckDB cursor is ``data``
    directory: SubjectDirectory  # the version's entities and tickers, in memory
    row_store: RowStore  # rows of open versions kept serialised (api/row_store.py)
    version: Version
    control_plane: sa.Engine
    today: dt.date
    page: PageWindow | None
    floor: dt.date | None = None
    subjects: Resolution | None = None
    subject_date: dt.date | None = None
    change_cursor: str | None = None  # keyed data answers: where their change feed starts
    warnings: list[str] = field(default_factory=list)

    @property
    def data(self) -> duckdb.DuckDBPyConnection:
        """The request's cursor on the version's DuckDB file (made on first use)."""
        return self.lease.cursor

    def window(self) -> tuple[dt.date | None, dt.date | None]:
        """``start`` and ``end`` with the Free floor applied to ``start``."""
        start, end = self.params.get("start"), self.params.get("end")
        if self.floor is not None and (start is None or start < self.floor):
            start = self.floor
        return start, end

    def selected_fields(self) -> list[str]:
        """Identity fields plus the selectable ones asked for with ``fields`` (all by default).

        Unknown names are skipped with a warning; none valid is the spec's 400."""
        spec = self.contract.fields
        asked = self.params.get("fields")
        if not asked:
            return spec.by_default
        unknown = [name for name in asked if name not in spec.selectable]
        chosen = [name for name in spec.selectable if name in asked]
        quoted = ", ".join(f"'{name}'" for name in unknown)
        if not chosen:
            raise BadRequest(
                f"No valid fields in request. Unknown field ignored: {quoted}. "
                f"Available fields: {', '.join(spec.selectable)}"
            )
        if unknown:
            self.warnings.append(f"Unknown field ignored: {quoted}")
        return [*spec.identity, *chosen]


@dataclass
class EndpointAnswer:
    """A handler's rows and what it adds to the envelope."""

    rows: list[dict[str, Any]] | list[orjson.Fragment] | dict[str, Any]
    has_more: bool = False
    next_offset: int | None = None
    total: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    top: dict[str, Any] = field(default_factory=dict)  # top-level keys besides data and meta
    warnings: list[str] = field(default_factory=list)
    cache_control: str = "public, max-age=86400"
    row_count: int | None = None  # rows for the quota when ``rows`` is not a list (resolve)
    #: the entities served, when ``rows`` are serialised already (else read from the rows)
    entity_ids: list[int] | None = None


@dataclass(frozen=True)
class ServiceCall:
    """A service endpoint's request: the key's owner (None where the key is never read)."""

    contract: EndpointContract
    owner: KeyOwner | None
    control_plane: sa.Engine
    counters: UsageCounters
    now: dt.datetime
    #: the published versions this worker serves (status names the one it serves)
    published: PublishedData


@dataclass(frozen=True)
class ServiceAnswer:
    """A service endpoint's whole body and its ``Cache-Control``."""

    body: dict[str, Any]
    cache_control: str


@functools.cache
def endpoint_handle(name: str) -> Callable[[Any], Any]:
    """``handle`` of ``api/endpoints/<name>.py`` (looked up once per endpoint, not per request)."""
    return importlib.import_module(f"findata.api.endpoints.{name}").handle


def fetch_page(
    call: EndpointCall, query: exp.Select, binder: Binder
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The page of an ordered ``query`` (one row more is read to know whether another page
    follows): its rows, and the next page's first row (None on the last page)."""
    assert call.page is not None
    paged = query.limit(binder(call.page.limit + 1)).offset(binder(call.page.offset))
    return split_page(call, fetch_dicts(call.data, paged, binder))


def split_page(
    call: EndpointCall, rows: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The page's rows, and the one read past it (the next page's first), if any."""
    assert call.page is not None
    following = rows[call.page.limit] if len(rows) > call.page.limit else None
    return rows[: call.page.limit], following


def page_answer(call: EndpointCall, rows: list[Any], following: Any | None) -> EndpointAnswer:
    """The answer of one cursor page: the next one starts right after ``rows``."""
    assert call.page is not None
    more = following is not None
    return EndpointAnswer(
        rows=rows, has_more=more, next_offset=call.page.offset + len(rows) if more else None
    )


def offset_answer(call: EndpointCall, rows: list[Any], total: int) -> EndpointAnswer:
    """The answer of one offset page: ``rows`` from the page's offset, of ``total`` rows."""
    assert call.page is not None
    next_offset = call.page.offset + len(rows)
    more = next_offset < total
    return EndpointAnswer(
        rows=rows, has_more=more, next_offset=next_offset if more else None, total=total
    )


def offset_page_of(call: EndpointCall, every_row: Sequence[Any]) -> EndpointAnswer:
    """One offset page of ``every_row`` (the whole answer, in order), with its total."""
    assert call.page is not None
    start = call.page.offset
    return offset_answer(call, list(every_row[start : start + call.page.limit]), len(every_row))


def ordered_page(call: EndpointCall, query: exp.Select, binder: Binder) -> EndpointAnswer:
    """One cursor page of an ordered ``query``."""
    return page_answer(call, *fetch_page(call, query, binder))


def paged(query: exp.Select) -> str:
    """The SQL of one page of an ordered ``query`` built once per shape: ``$page_limit`` rows
    (one more than the page, to know whether another follows) from ``$page_offset``."""
    return query.limit(slot("page_limit")).offset(slot("page_offset")).sql(dialect="duckdb")


def ordered_page_of_sql(call: EndpointCall, sql: str, values: dict[str, Any]) -> EndpointAnswer:
    """One cursor page of SQL text from :func:`paged`, with this request's ``values``."""
    assert call.page is not None
    page = {"page_limit": call.page.limit + 1, "page_offset": call.page.offset}
    rows = fetch_dicts_of_sql(call.data, sql, {**values, **page})
    return page_answer(call, *split_page(call, rows))
