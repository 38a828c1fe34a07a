"""``/v1/index/{index_name}/events``: the additions and removals of an index, by effective date."""

from __future__ import annotations

from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall
from findata.api.endpoints.index import index_code, index_meta, offset_page
from findata.api.query import Binder, column

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
    binder = Binder()
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
        .where(exp.EQ(this=column("index_code"), expression=binder(code)))
    )
    if start is not None:
        events = events.where(exp.GTE(this=column("effective_date"), expression=binder(start)))
    if end is not None:
        events = events.where(exp.LTE(this=column("effective_date"), expression=binder(end)))

    answer = offset_page(call, events, binder)
    answer.meta = {"index": code.upper(), **index_meta(call, code)}
    return answer
