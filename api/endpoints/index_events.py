"""``/v1/index/{index_name}/events``: the additions and removals of an index, by effective date."""

from __future__ import annotations

import functools
from typing import Any

from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall
from findata.api.endpoints.index import index_code, index_meta, offset_page, offset_page_sql
from findata.api.query import column, slot
from findata.contracts.endpoints import OrderTerm

#: added before removed on one effective date
EVENT_RANK = exp.Case(
    ifs=[exp.If(this=exp.EQ(this=column("event"), expression=exp.Literal.string("added")),
                true=exp.Literal.number(0))],
    default=exp.Literal.number(1),
)  # fmt: skip


def handle(call: EndpointCall) -> EndpointAnswer:
    """One page of the path's index events, with the Free floor applied to ``start``."""
    code = index_code(call)
    start, end = call.window()
    values: dict[str, Any] = {"code": code}
    values.update({name: day for name, day in (("start", start), ("end", end)) if day})
    contract = call.contract
    sqls = _sql(
        (start is not None, end is not None),
        tuple(contract.fields.identity),
        tuple(contract.order),
    )
    answer = offset_page(call, sqls, values)
    answer.meta = {"index": code.upper(), **index_meta(call, code)}
    return answer


@functools.lru_cache(maxsize=16)
def _sql(
    bounds: tuple[bool, bool], fields: tuple[str, ...], order: tuple[OrderTerm, ...]
) -> tuple[str, str]:
    """The total's and a page's SQL of an index's events (``bounds``: whether ``start`` and
    ``end`` are bound), built once."""
    events = (
        exp.select(
            column("event"),
            column("effective_date"),
            column("entity_id"),
            column("ticker"),
            column("entity_name"),
            exp.alias_(exp.Upper(this=column("index_code")), "index"),
            exp.alias_(EVENT_RANK.copy(), "event_rank"),
            column("membership_id"),
        )
        .from_("index_events")
        .where(exp.EQ(this=column("index_code"), expression=slot("code")))
    )
    if bounds[0]:
        events = events.where(exp.GTE(this=column("effective_date"), expression=slot("start")))
    if bounds[1]:
        events = events.where(exp.LTE(this=column("effective_date"), expression=slot("end")))
    return offset_page_sql(events, fields, order)
