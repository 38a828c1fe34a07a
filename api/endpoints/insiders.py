"""``/v1/insiders``: Form 4 and 4/A lines of the companies the request names, newest first.

The SQL of the lines is built once per shape of request (number of companies, which bounds and
flags): building it with sqlglot cost more than DuckDB's query. One company's lines (the common
request) are answered from its lines kept serialised in memory (``api/memory_pages.py``), loaded
with that same SQL, without the window, once per version and shape."""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall, ordered_page_of_sql, paged
from findata.api.memory_pages import page_from_memory
from findata.api.query import column, fetch_dicts_of_sql, order_by, slot
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
    shape = Shape(
        fields=tuple(call.contract.fields.identity),
        issuers=len(issuers),
        bounds=(start is not None, end is not None),
        left_out=tuple(flag for flag in EXCLUDED_WHEN_FALSE if not call.params.get(flag)),
        include_uncoded=bool(call.params.get("include_uncoded")),
        order=tuple(call.contract.order),
    )
    answer = None
    if _answered_from_memory(call, shape):
        # one company's every line of the request's shape: the entry's load and its key
        lines = replace(shape, issuers=1, bounds=(False, False))
        load = functools.partial(_company_lines, call, lines)
        answer = page_from_memory(
            call,
            "insider_transactions",
            lines,
            issuers,
            load,
            (start, end),
            date_field="transaction_date",
            newest_first=True,
        )
    if answer is None:
        values: dict[str, Any] = {f"issuer_{n}": issuer for n, issuer in enumerate(issuers)}
        values.update({name: day for name, day in (("start", start), ("end", end)) if day})
        answer = ordered_page_of_sql(call, _sql(shape), values)
    answer.top = {
        "tickers": _tickers_served(call),
        "data_through": call.version.data_through.get("insider_transactions"),
    }
    answer.meta = {"entity_id_is": "issuer"}
    return answer


@dataclass(frozen=True)
class Shape:
    """What the SQL of an insiders request depends on (its values are bound per request)."""

    fields: tuple[str, ...]
    issuers: int
    #: whether ``start`` and ``end`` are bound
    bounds: tuple[bool, bool]
    #: the flags asked false
    left_out: tuple[str, ...]
    include_uncoded: bool
    order: tuple[OrderTerm, ...]


def _answered_from_memory(call: EndpointCall, shape: Shape) -> bool:
    """One company's lines are answered from the row store (its lines in the contract's order,
    newest first, are one slice of them per window), when the store is on; the lines of several
    companies interleave by date and are asked of DuckDB."""
    return (
        call.row_store.enabled
        and shape.issuers == 1
        and shape.order[0].column == "transaction_date"
        and shape.order[0].descending
    )


def _company_lines(call: EndpointCall, lines: Shape, issuer: int) -> list[dict[str, Any]]:
    """Every line of one company of the ``lines`` shape in the contract's order: what the row
    store keeps."""
    return fetch_dicts_of_sql(call.data, _unpaged_sql(lines), {"issuer_0": issuer})


@functools.lru_cache(maxsize=256)
def _sql(shape: Shape) -> str:
    """The SQL of one page of lines of a request of ``shape``, built once."""
    return paged(_ordered_query(shape))


@functools.lru_cache(maxsize=64)
def _unpaged_sql(shape: Shape) -> str:
    """The SQL of every line of a request of ``shape``, built once."""
    return _ordered_query(shape).sql(dialect="duckdb")


def _ordered_query(shape: Shape) -> exp.Select:
    """The lines of a request of ``shape`` in the contract's order."""
    query = (
        exp.select(*shape.fields)
        .from_("insider_transactions")
        .where(column("entity_id").isin(*(slot(f"issuer_{n}") for n in range(shape.issuers))))
    )
    if shape.bounds[0]:
        query = query.where(exp.GTE(this=column("transaction_date"), expression=slot("start")))
    if shape.bounds[1]:
        query = query.where(exp.LTE(this=column("transaction_date"), expression=slot("end")))
    for flag in shape.left_out:
        query = query.where(exp.not_(column(EXCLUDED_WHEN_FALSE[flag])))
    if not shape.include_uncoded:
        query = query.where(column("is_coded"))
    return query.order_by(*order_by(shape.order))


def _tickers_served(call: EndpointCall) -> list[str]:
    """The requested tickers that were served; for ``entity_id`` requests, the tickers the
    served companies' securities traded under on the resolution date."""
    assert call.subjects is not None
    if not call.params.get("entity_id"):
        return list(call.subjects.resolved)
    on = call.subject_date or call.today
    return call.directory.security_tickers(call.subjects.entity_ids, on)
