"""``/v1/insiders``: Form 4 and 4/A lines of the companies the request names, newest first.

The SQL of the lines is built once per shape of request (number of companies, which bounds and
flags): building it with sqlglot cost more than DuckDB's query."""

from __future__ import annotations

import functools
from typing import Any

from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall, ordered_page_of_sql, paged
from findata.api.query import column, order_by, slot
from findata.contracts.endpoints import OrderTerm

#: flag -> the column whose true rows the flag's ``false`` leaves out (uncoded: the opposite)
EXCLUDED_WHEN_FALSE = {
    "include_amendments": "is_amendment",
    "include_derivatives": "is_derivative",
}


def handle(call: EndpointCall) -> EndpointAnswer:
    """The lines of the resolved issuers in the window, filtered by the flags, a page at a time."""
    assert call.subjects is not None and call.page is not None
    issuers = call.subjects.entity_ids
    start, end = call.window()
    left_out = tuple(flag for flag in EXCLUDED_WHEN_FALSE if not call.params.get(flag))
    sql = _sql(
        tuple(call.contract.fields.identity),
        len(issuers),
        (start is not None, end is not None),
        left_out,
        bool(call.params.get("include_uncoded")),
        tuple(call.contract.order),
    )
    values: dict[str, Any] = {f"issuer_{n}": issuer for n, issuer in enumerate(issuers)}
    values.update({name: day for name, day in (("start", start), ("end", end)) if day})
    answer = ordered_page_of_sql(call, sql, values)
    answer.top = {
        "tickers": _tickers_served(call),
        "data_through": call.version.data_through.get("insider_transactions"),
    }
    answer.meta = {"entity_id_is": "issuer"}
    return answer


@functools.lru_cache(maxsize=256)
def _sql(
    fields: tuple[str, ...],
    issuers: int,
    bounds: tuple[bool, bool],
    left_out: tuple[str, ...],
    include_uncoded: bool,
    order: tuple[OrderTerm, ...],
) -> str:
    """The SQL of one page of lines of ``issuers`` companies (``bounds``: whether ``start``
    and ``end`` are bound; ``left_out``: the flags asked false), built once."""
    query = (
        exp.select(*fields)
        .from_("insider_transactions")
        .where(column("entity_id").isin(*(slot(f"issuer_{n}") for n in range(issuers))))
    )
    if bounds[0]:
        query = query.where(exp.GTE(this=column("transaction_date"), expression=slot("start")))
    if bounds[1]:
        query = query.where(exp.LTE(this=column("transaction_date"), expression=slot("end")))
    for flag in left_out:
        query = query.where(exp.not_(column(EXCLUDED_WHEN_FALSE[flag])))
    if not include_uncoded:
        query = query.where(column("is_coded"))
    return paged(query.order_by(*order_by(order)))


def _tickers_served(call: EndpointCall) -> list[str]:
    """The requested tickers that were served; for ``entity_id`` requests, the tickers the
    served companies' securities traded under on the resolution date."""
    assert call.subjects is not None
    if not call.params.get("entity_id"):
        return list(call.subjects.resolved)
    on = call.subject_date or call.today
    return call.directory.security_tickers(call.subjects.entity_ids, on)
