"""``/v1/fundamentals``: point-in-time statements of companies — the latest figures per period,
the figures as known on ``as_of``, or every filing of each period (``view=as_reported``).

The SQL is built once per shape of request (fields, number of companies, which bounds and
filters): sqlglot's building cost ~3x DuckDB's query on the typical request (one company, a
page of quarters); each request binds its values to the named slots."""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall, page_answer, paged, split_page
from findata.api.query import column, fetch_dicts_of_sql, order_by, slot
from findata.api.subjects import parse_tickers
from findata.contracts.endpoints import OrderTerm

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
    values: dict[str, Any] = {f"issuer_{n}": issuer for n, issuer in enumerate(issuers)}
    bound = {"start": start, "end": end, "period": period if shape.by_period else None}
    values.update({name: value for name, value in bound.items() if value is not None})
    if as_of is not None:
        values["as_of"] = as_of
    values.update(page_limit=call.page.limit + 1, page_offset=call.page.offset)
    rows = fetch_dicts_of_sql(call.data, _sql(shape, tuple(call.contract.order)), values)
    served, following = split_page(call, rows)
    if shape.as_reported and following is not None:
        served = _end_before_a_split_period(served, following)
    return page_answer(call, served, following)


@functools.lru_cache(maxsize=256)
def _sql(shape: Shape, order: tuple[OrderTerm, ...]) -> str:
    """The SQL of one page of a request of ``shape``, built once."""
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
    return paged(
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
    page: list[dict[str, Any]], following: dict[str, Any]
) -> list[dict[str, Any]]:
    """Spec, "Row order": an as_reported page that would end partway through one period's
    filings ends before that period, unless the period fills the page from its first row (it
    alone has more filings than ``limit``), in which case the next page continues it."""
    split = _period_key(following)
    if _period_key(page[-1]) != split:
        return page
    first = next(i for i, row in enumerate(page) if _period_key(row) == split)
    return page[:first] if first > 0 else page


def path_tickers(call: EndpointCall) -> list[str]:
    """The tickers of the path, as the framework parsed them (none for ``entity_id`` requests)."""
    subject = call.contract.subject
    assert subject is not None
    return parse_tickers(call.path.get(subject.path_parameter or ""))
