"""``/v1/fundamentals``: point-in-time statements of companies — the latest figures per period,
the figures as known on ``as_of``, or every filing of each period (``view=as_reported``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall, fetch_page, page_answer
from findata.api.query import Binder, column, order_by
from findata.api.subjects import parse_tickers

#: output name -> the expression it is read from (``f`` the dataset, ``e`` the issuer's entity)
SOURCES = {
    "entity_id": "f.issuer_entity_id",
    "entity_name": "e.name",
}


def handle(call: EndpointCall) -> EndpointAnswer:
    """The chosen rows of the resolved companies in the window, a page at a time."""
    assert call.subjects is not None and call.page is not None
    fields = call.selected_fields()
    start, end = call.window()
    as_of: dt.date | None = call.params.get("as_of")
    as_reported = call.params.get("view") == "as_reported"
    period = call.params.get("period")
    binder = Binder()

    # company grain: every subject resolved to its issuer, so these are issuer entity ids
    issuers = sorted(set(call.subjects.entity_ids))
    rows_from = (
        exp.select(*(_source(name, as_of, binder) for name in fields))
        .from_(exp.alias_(exp.to_table("fundamentals"), "f"))
        .join("entities AS e", on="e.entity_id = f.issuer_entity_id", join_type="left")
        .where(column("issuer_entity_id", "f").isin(*binder.each(issuers)))
    )
    if start is not None:
        rows_from = rows_from.where(
            exp.GTE(this=column("period_end", "f"), expression=binder(start))
        )
    if end is not None:
        rows_from = rows_from.where(exp.LTE(this=column("period_end", "f"), expression=binder(end)))
    if period in ("annual", "quarterly"):
        rows_from = rows_from.where(column("period_type", "f").eq(binder(period)))
    rows_from = rows_from.where(_known(as_of, as_reported, binder))

    query = (
        exp.select(*fields)
        .from_(exp.alias_(rows_from.subquery(), "answer"))
        .order_by(*order_by(call.contract.order))
    )
    served, following = fetch_page(call, query, binder)
    if as_reported and following is not None:
        served = _end_before_a_split_period(served, following)
    return page_answer(call, served, following)


def _source(name: str, as_of: dt.date | None, binder: Binder) -> exp.Expression:
    """The select expression of one output field."""
    if name == "superseded_on" and as_of is not None:
        # on as_of a later filing was not yet known: the row was not superseded then
        known_then = exp.LTE(this=column("superseded_on", "f"), expression=binder(as_of))
        kept = exp.Case().when(known_then, column("superseded_on", "f"))
        return exp.alias_(kept, name)
    source = SOURCES.get(name, f"f.{name}")
    return exp.alias_(exp.maybe_parse(source, dialect="duckdb"), name)


def _known(as_of: dt.date | None, as_reported: bool, binder: Binder) -> exp.Expression:
    """Which filings of a period are served: every one (known on as_of), or the current one."""
    if as_reported:
        if as_of is None:
            return exp.true()
        return exp.LTE(this=column("known_from", "f"), expression=binder(as_of))
    if as_of is None:
        return column("superseded_on", "f").is_(exp.null())
    # the row known on as_of: filed by then and not yet replaced by a later filing then
    return exp.and_(
        exp.LTE(this=column("known_from", "f"), expression=binder(as_of)),
        exp.or_(
            column("superseded_on", "f").is_(exp.null()),
            exp.GT(this=column("superseded_on", "f"), expression=binder(as_of)),
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
