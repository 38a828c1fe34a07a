"""``/v1/search``: entities (securities and issuers) matching free text, ranked, offset paged
(spec: "Row order" for search, search ``meta``, "Keyless access": the same answer with or without
a key)."""

from __future__ import annotations

from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall
from findata.api.query import Binder, column, fetch_all, fetch_dicts, order_by

#: match ranks, best first (the spec's order with `q`)
EXACT_TICKER, TICKER_PREFIX, NAME_PREFIX, OTHER = 0, 1, 2, 3


def handle(call: EndpointCall) -> EndpointAnswer:
    """One page of the matching entities and the total."""
    assert call.page is not None
    q: str = call.params.get("q") or ""
    binder = Binder()
    matching = _matching(q, binder)
    total = fetch_all(
        call.data, exp.select(exp.Count(this=exp.Star())).from_(matching.subquery("m")), binder
    )[0][0]
    fields = call.contract.fields.identity
    query = (
        exp.select(*fields)
        .from_(matching.subquery("m"))
        .order_by(*order_by(call.contract.order))
        .limit(binder(call.page.limit))
        .offset(binder(call.page.offset))
    )
    rows = fetch_dicts(call.data, query, binder)
    next_offset = call.page.offset + len(rows)
    has_more = next_offset < total
    return EndpointAnswer(
        rows=rows,
        has_more=has_more,
        next_offset=next_offset if has_more else None,
        total=total,
    )


def _matching(q: str, binder: Binder) -> exp.Select:
    """Every entity matching ``q`` (all without ``q``) with its rank and sort name."""
    name_key = exp.alias_(exp.Lower(this=column("name")), "name_key")
    if not q:
        return exp.select("*", exp.alias_(exp.Literal.number(0), "match_rank"), name_key).from_(
            "entities"
        )
    upper, lower = binder(q.upper()), binder(q.lower())
    ticker = exp.Upper(this=column("ticker"))
    name = exp.Lower(this=column("name"))
    exact_ticker = ticker.eq(upper)
    ticker_prefix = exp.func("starts_with", ticker.copy(), upper.copy())
    name_prefix = exp.func("starts_with", name, lower)
    former_ticker = exp.Exists(
        this=exp.select("1")
        .from_(exp.alias_(exp.to_table("ticker_history"), "h"))
        .where(column("entity_id", "h").eq(column("entity_id", "entities")))
        .where(exp.Upper(this=column("ticker", "h")).eq(upper.copy()))
    )
    other = [
        exp.func("contains", name.copy(), lower.copy()),
        exp.func("contains", ticker.copy(), upper.copy()),
        former_ticker,  # a ticker the entity had before (a renamed security's old ticker)
        exp.Upper(this=column("figi")).eq(upper.copy()),
    ]
    if q.isdigit() and len(q) <= 10:
        other.append(column("cik").eq(binder(q.zfill(10))))  # a CIK with or without padding
    rank = (
        exp.Case()
        .when(exact_ticker, exp.Literal.number(EXACT_TICKER))
        .when(ticker_prefix, exp.Literal.number(TICKER_PREFIX))
        .when(name_prefix, exp.Literal.number(NAME_PREFIX))
        .else_(exp.Literal.number(OTHER))
    )
    matches = exp.or_(exact_ticker.copy(), ticker_prefix.copy(), name_prefix.copy(), *other)
    return (
        exp.select("*", exp.alias_(rank, "match_rank"), name_key).from_("entities").where(matches)
    )
