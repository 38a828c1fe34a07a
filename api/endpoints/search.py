"""``/v1/search``: entities (securities and issuers) matching free text, ranked, offset paged
(spec: "Row order" for search, search ``meta``, "Keyless access": the same answer with or without
a key). The SQL is built once per shape (with or without ``q``, ``q`` a CIK or not): building
it with sqlglot cost more than DuckDB's query."""

from __future__ import annotations

import functools
from typing import Any

from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall
from findata.api.query import column, fetch_dicts_of_sql, order_by, slot
from findata.contracts.endpoints import OrderTerm

#: match ranks, best first (the spec's order with `q`)
EXACT_TICKER, TICKER_PREFIX, NAME_PREFIX, OTHER = 0, 1, 2, 3


def handle(call: EndpointCall) -> EndpointAnswer:
    """One page of the matching entities and the total."""
    assert call.page is not None
    q: str = call.params.get("q") or ""
    by_cik = q.isdigit() and len(q) <= 10  # a CIK with or without padding
    values: dict[str, Any] = {"q_upper": q.upper(), "q_lower": q.lower()} if q else {}
    if by_cik:
        values["cik"] = q.zfill(10)
    contract = call.contract
    count_sql, page_sql = _sql(
        bool(q), by_cik, tuple(contract.fields.identity), tuple(contract.order)
    )
    (counted,) = fetch_dicts_of_sql(call.data, count_sql, values)
    total: int = counted["total"]
    page = {"page_limit": call.page.limit, "page_offset": call.page.offset}
    rows = fetch_dicts_of_sql(call.data, page_sql, {**values, **page})
    next_offset = call.page.offset + len(rows)
    has_more = next_offset < total
    return EndpointAnswer(
        rows=rows,
        has_more=has_more,
        next_offset=next_offset if has_more else None,
        total=total,
    )


@functools.lru_cache(maxsize=16)
def _sql(
    has_q: bool, by_cik: bool, fields: tuple[str, ...], order: tuple[OrderTerm, ...]
) -> tuple[str, str]:
    """The SQL of the total and of one page of the matches, built once per shape."""
    matching = _matching(has_q, by_cik)
    counted = exp.alias_(exp.Count(this=exp.Star()), "total")
    total = exp.select(counted).from_(matching.subquery("m"))
    page = (
        exp.select(*fields)
        .from_(matching.subquery("m"))
        .order_by(*order_by(order))
        .limit(slot("page_limit"))
        .offset(slot("page_offset"))
    )
    return total.sql(dialect="duckdb"), page.sql(dialect="duckdb")


def _matching(has_q: bool, by_cik: bool) -> exp.Select:
    """Every entity matching ``q`` (all without ``q``) with its rank and sort name."""
    name_key = exp.alias_(exp.Lower(this=column("name")), "name_key")
    if not has_q:
        return exp.select("*", exp.alias_(exp.Literal.number(0), "match_rank"), name_key).from_(
            "entities"
        )
    upper, lower = slot("q_upper"), slot("q_lower")
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
    if by_cik:
        other.append(column("cik").eq(slot("cik")))
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
