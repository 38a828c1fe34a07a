"""``/v1/insiders``: Form 4 and 4/A lines of the companies the request names, newest first."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall, ordered_page
from findata.api.query import Binder, column, fetch_dicts, order_by
from findata.api.resolution import valid_on

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
    binder = Binder()

    query = (
        exp.select(*call.contract.fields.identity)
        .from_("insider_transactions")
        .where(column("entity_id").isin(*binder.each(issuers)))
    )
    if start is not None:
        query = query.where(exp.GTE(this=column("transaction_date"), expression=binder(start)))
    if end is not None:
        query = query.where(exp.LTE(this=column("transaction_date"), expression=binder(end)))
    for flag, flagged in EXCLUDED_WHEN_FALSE.items():
        if not call.params.get(flag):
            query = query.where(exp.not_(column(flagged)))
    if not call.params.get("include_uncoded"):
        query = query.where(column("is_coded"))
    answer = ordered_page(call, query.order_by(*order_by(call.contract.order)), binder)
    answer.top = {
        "tickers": _tickers_served(call),
        "data_through": call.version.data_through.get("insider_transactions"),
    }
    answer.meta = {"entity_id_is": "issuer"}
    return answer


def _tickers_served(call: EndpointCall) -> list[str]:
    """The requested tickers that were served; for ``entity_id`` requests, the tickers the
    served companies' securities traded under on the resolution date."""
    assert call.subjects is not None
    if not call.params.get("entity_id"):
        return list(call.subjects.resolved)
    on = call.subject_date or call.today
    binder = Binder()
    query = (
        exp.select("ticker")
        .distinct()
        .from_("ticker_history")
        .where(column("issuer_entity_id").isin(*binder.each(call.subjects.entity_ids)))
        .where(column("entity_grain").eq(binder("security")))
        .where(valid_on(on, binder))
        .order_by("ticker")
    )
    rows: list[dict[str, Any]] = fetch_dicts(call.data, query, binder)
    return [row["ticker"] for row in rows]
