"""``/v1/fundamentals``: point-in-time statements of companies — the latest figures per period,
the figures as known on ``as_of``, or every filing of each period (``view=as_reported``).

The SQL is built once per shape of request (fields, number of companies, which bounds and
filters): sqlglot's building cost ~3x DuckDB's query on the typical request (one company, a
page of quarters); each request binds its values to the named slots. One company's rows (the
common request) are answered from memory: every row of the company (each filing, superseded or
not) is asked of DuckDB once per version and field list and kept in the row store
(``api/row_store.py``), and each request takes the rows of its window and period known on its
``as_of`` (``_known_on``: ``_known``'s rule, row by row; the answers are byte for byte the SQL
path's, ``tests/api/test_row_store.py``)."""

from __future__ import annotations

import bisect
import datetime as dt
import functools
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import orjson
from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall, page_answer, paged, split_page
from findata.api.query import column, fetch_dicts_of_sql, order_by, slot
from findata.api.responses import json_text
from findata.api.subjects import parse_tickers
from findata.contracts.endpoints import OrderTerm

Row = TypeVar("Row")

#: what a kept statement costs beyond its JSON texts: the objects, the dates, list slots
STATEMENT_OVERHEAD_BYTES = 200

#: output name -> the expression it is read from (``f`` the dataset, ``e`` the issuer's entity)
SOURCES = {
    "entity_id": "f.issuer_entity_id",
    "entity_name": "e.name",
}


@dataclass(frozen=True)
class Shape:
    """What the SQL of a request depends on (its values are bound to named slots)."""

    fields: tuple[str, ...]
    companies: int
    has_start: bool
    has_end: bool
    #: ``period`` filters on the period type (annual, quarterly); otherwise every type
    by_period: bool
    has_as_of: bool
    as_reported: bool


def handle(call: EndpointCall) -> EndpointAnswer:
    """The chosen rows of the resolved companies in the window, a page at a time."""
    assert call.subjects is not None and call.page is not None
    start, end = call.window()
    as_of: dt.date | None = call.params.get("as_of")
    period = call.params.get("period")
    # company grain: every subject resolved to its issuer, so these are issuer entity ids
    issuers = sorted(set(call.subjects.entity_ids))
    shape = Shape(
        fields=tuple(call.selected_fields()),
        companies=len(issuers),
        has_start=start is not None,
        has_end=end is not None,
        by_period=period in ("annual", "quarterly"),
        has_as_of=as_of is not None,
        as_reported=call.params.get("view") == "as_reported",
    )
    if _answered_from_memory(call, shape):
        answer = _page_from_memory(call, shape, issuers[0], (start, end), period, as_of)
        if answer is not None:
            return answer
    values: dict[str, Any] = {f"issuer_{n}": issuer for n, issuer in enumerate(issuers)}
    bound = {"start": start, "end": end, "period": period if shape.by_period else None}
    values.update({name: value for name, value in bound.items() if value is not None})
    if as_of is not None:
        values["as_of"] = as_of
    values.update(page_limit=call.page.limit + 1, page_offset=call.page.offset)
    rows = fetch_dicts_of_sql(call.data, _sql(shape, tuple(call.contract.order)), values)
    served, following = split_page(call, rows)
    if shape.as_reported and following is not None:
        served = _end_before_a_split_period(served, following, _period_key)
    return page_answer(call, served, following)


@dataclass(frozen=True)
class Statement:
    """One row of a company's statements as the row store keeps it: what ``_known`` and the
    window read, and its JSON text (and the text as known before ``superseded_on``)."""

    period_end: dt.date
    period_type: str
    known_from: dt.date
    superseded_on: dt.date | None
    text: orjson.Fragment
    #: the text with ``superseded_on`` null: the row as known on a day before it was superseded
    unsuperseded: orjson.Fragment | None


@dataclass(frozen=True)
class CompanyStatements:
    """Every row of one company of one field list, in the contract's order."""

    period_days: list[int]  # each row's period_end as a day number (ascending)
    rows: list[Statement]
    size: int


def _answered_from_memory(call: EndpointCall, shape: Shape) -> bool:
    """One company's statements are answered from the row store (every row of the company,
    each request choosing the rows known on its ``as_of`` in the window), when the store is
    on and the contract orders one company's rows by ``period_end`` first."""
    return (
        call.row_store.enabled
        and shape.companies == 1
        and [(t.column, t.descending) for t in call.contract.order[:2]]
        == [("entity_id", False), ("period_end", False)]
    )


def _page_from_memory(
    call: EndpointCall,
    shape: Shape,
    issuer: int,
    window: tuple[dt.date | None, dt.date | None],
    period: str | None,
    as_of: dt.date | None,
) -> EndpointAnswer | None:
    """The page the SQL path answers, from the company's statements kept in memory: the rows
    of the window (period_end), of ``period`` (when it filters), known on ``as_of`` as
    ``_known`` says, each with ``superseded_on`` as ``_source`` shows it. None when the
    company's rows are too large for the store: the caller asks DuckDB."""
    assert call.page is not None
    every_row = replace(
        shape, has_start=False, has_end=False, by_period=False, has_as_of=False, as_reported=True
    )
    held = call.row_store.kept(
        (call.version.label, "fundamentals", issuer, every_row),
        functools.partial(_company_statements, call, every_row, issuer),
    )
    if held is None:
        return None
    start, end = window
    low = 0 if start is None else bisect.bisect_left(held.period_days, start.toordinal())
    high = len(held.rows) if end is None else bisect.bisect_right(held.period_days, end.toordinal())
    chosen = [
        row
        for row in held.rows[low:high]
        if (not shape.by_period or row.period_type == period)
        and _known_on(row, as_of, shape.as_reported)
    ]
    first, last = call.page.offset, call.page.offset + call.page.limit
    served, following = chosen[first:last], chosen[last] if len(chosen) > last else None
    if shape.as_reported and following is not None:
        served = _end_before_a_split_period(served, following, lambda row: row.period_end)
    answer = page_answer(call, [_text_on(row, as_of) for row in served], following)
    answer.entity_ids = [issuer] if served else []
    return answer


def _company_statements(call: EndpointCall, every_row: Shape, issuer: int) -> CompanyStatements:
    """Every row of the company (every filing, superseded or not) of the ``every_row`` shape,
    in the contract's order: what the row store keeps."""
    sql = _unpaged_sql(every_row, tuple(call.contract.order))
    period_days: list[int] = []
    rows: list[Statement] = []
    size = 0
    for row in fetch_dicts_of_sql(call.data, sql, {"issuer_0": issuer}):
        text = json_text(row)
        unsuperseded = json_text({**row, "superseded_on": None}) if row["superseded_on"] else None
        period_days.append(row["period_end"].toordinal())
        rows.append(
            Statement(
                row["period_end"],
                row["period_type"],
                row["known_from"],
                row["superseded_on"],
                orjson.Fragment(text),
                orjson.Fragment(unsuperseded) if unsuperseded is not None else None,
            )
        )
        size += len(text) + len(unsuperseded or b"") + STATEMENT_OVERHEAD_BYTES
    return CompanyStatements(period_days, rows, size)


def _known_on(row: Statement, as_of: dt.date | None, as_reported: bool) -> bool:
    """``_known`` for one kept row: served on ``as_of`` (None: now)."""
    if as_of is None:
        return as_reported or row.superseded_on is None
    if row.known_from > as_of:
        return False
    return as_reported or row.superseded_on is None or row.superseded_on > as_of


def _text_on(row: Statement, as_of: dt.date | None) -> orjson.Fragment:
    """The row's text as ``_source`` shows it on ``as_of``: ``superseded_on`` only once it has
    happened."""
    if as_of is not None and row.unsuperseded is not None:
        assert row.superseded_on is not None
        if row.superseded_on > as_of:
            return row.unsuperseded
    return row.text


@functools.lru_cache(maxsize=256)
def _sql(shape: Shape, order: tuple[OrderTerm, ...]) -> str:
    """The SQL of one page of a request of ``shape``, built once."""
    return paged(_ordered_query(shape, order))


@functools.lru_cache(maxsize=64)
def _unpaged_sql(shape: Shape, order: tuple[OrderTerm, ...]) -> str:
    """The SQL of every row of a request of ``shape``, built once."""
    return _ordered_query(shape, order).sql(dialect="duckdb")


def _ordered_query(shape: Shape, order: tuple[OrderTerm, ...]) -> exp.Select:
    """The rows of a request of ``shape`` in the contract's order."""
    issuers = [slot(f"issuer_{n}") for n in range(shape.companies)]
    rows_from = (
        exp.select(*(_source(name, shape.has_as_of) for name in shape.fields))
        .from_(exp.alias_(exp.to_table("fundamentals"), "f"))
        .join("entities AS e", on="e.entity_id = f.issuer_entity_id", join_type="left")
        .where(column("issuer_entity_id", "f").isin(*issuers))
    )
    if shape.has_start:
        rows_from = rows_from.where(
            exp.GTE(this=column("period_end", "f"), expression=slot("start"))
        )
    if shape.has_end:
        rows_from = rows_from.where(exp.LTE(this=column("period_end", "f"), expression=slot("end")))
    if shape.by_period:
        rows_from = rows_from.where(column("period_type", "f").eq(slot("period")))
    rows_from = rows_from.where(_known(shape.has_as_of, shape.as_reported))
    return (
        exp.select(*shape.fields)
        .from_(exp.alias_(rows_from.subquery(), "answer"))
        .order_by(*order_by(order))
    )


def _source(name: str, has_as_of: bool) -> exp.Expression:
    """The select expression of one output field."""
    if name == "superseded_on" and has_as_of:
        # on as_of a later filing was not yet known: the row was not superseded then
        known_then = exp.LTE(this=column("superseded_on", "f"), expression=slot("as_of"))
        kept = exp.Case().when(known_then, column("superseded_on", "f"))
        return exp.alias_(kept, name)
    source = SOURCES.get(name, f"f.{name}")
    return exp.alias_(exp.maybe_parse(source, dialect="duckdb"), name)


def _known(has_as_of: bool, as_reported: bool) -> exp.Expression:
    """Which filings of a period are served: every one (known on as_of), or the current one."""
    if as_reported:
        if not has_as_of:
            return exp.true()
        return exp.LTE(this=column("known_from", "f"), expression=slot("as_of"))
    if not has_as_of:
        return column("superseded_on", "f").is_(exp.null())
    # the row known on as_of: filed by then and not yet replaced by a later filing then
    return exp.and_(
        exp.LTE(this=column("known_from", "f"), expression=slot("as_of")),
        exp.or_(
            column("superseded_on", "f").is_(exp.null()),
            exp.GT(this=column("superseded_on", "f"), expression=slot("as_of")),
        ),
    )


def _period_key(row: dict[str, Any]) -> tuple[Any, Any]:
    """One company's period: its statements ending on one day (contiguous in the row order)."""
    return row["entity_id"], row["period_end"]


def _end_before_a_split_period(
    page: list[Row], following: Row, period_of: Callable[[Row], Hashable]
) -> list[Row]:
    """Spec, "Row order": an as_reported page that would end partway through one period's
    filings ends before that period, unless the period fills the page from its first row (it
    alone has more filings than ``limit``), in which case the next page continues it. Rows are
    of one company's period when ``period_of`` says so (contiguous in the row order)."""
    split = period_of(following)
    if period_of(page[-1]) != split:
        return page
    first = next(i for i, row in enumerate(page) if period_of(row) == split)
    return page[:first] if first > 0 else page


def path_tickers(call: EndpointCall) -> list[str]:
    """The tickers of the path, as the framework parsed them (none for ``entity_id`` requests)."""
    subject = call.contract.subject
    assert subject is not None
    return parse_tickers(call.path.get(subject.path_parameter or ""))
