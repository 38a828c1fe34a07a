"""``/v1/search``: entities (securities and issuers) matching free text, ranked, offset paged
(spec: "Row order" for search, search ``meta``, "Keyless access": the same answer with or without
a key). The SQL is built once per shape (with or without ``q``, ``q`` a CIK or not): building
it with sqlglot cost more than DuckDB's query.

The row store keeps a version's entities as one entry (``SearchIndex``): every entity in the
order of the answer without ``q`` (as DuckDB sorts it), with the keys the SQL compares (``lower``
and ``upper`` as DuckDB computes them), the names and tickers joined into one text each, so that
finding every entity whose name or ticker contains ``q`` is one scan at C speed. A request is
answered from it by the SQL's rule, byte for byte (``tests/api/test_row_store.py``); with the
store off, DuckDB is asked.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall, offset_answer, offset_page_of
from findata.api.query import column, fetch_dicts_of_sql, order_by, slot
from findata.contracts.endpoints import OrderTerm, load_endpoint_contract

#: this endpoint's contract (its order, for the entities' order without ``q``)
SEARCH = "search"

#: match ranks, best first (the spec's order with `q`)
EXACT_TICKER, TICKER_PREFIX, NAME_PREFIX, OTHER = 0, 1, 2, 3


#: separates the entities' names (and tickers) in ``SearchIndex``'s joined texts
SEPARATOR = "\x00"
#: what a kept entity costs, about (its row's dict and values, its keys, text and positions)
ENTITY_BYTES = 1500


@dataclass(frozen=True)
class SearchIndex:
    """A version's entities, in the order of the answer without ``q``, with what ``_matching``
    compares: lower(name), upper(ticker), upper(figi), cik, upper(former tickers)."""

    rows: list[dict[str, Any]]
    name_keys: list[str | None]
    ticker_keys: list[str | None]
    #: every name key (tickers: ticker key) joined by ``SEPARATOR``, and where each starts
    names: str
    name_starts: list[int]
    tickers: str
    ticker_starts: list[int]
    #: positions of the entities with each upper(figi), cik, upper(former ticker)
    figis: dict[str, list[int]]
    ciks: dict[str, list[int]]
    former_tickers: dict[str, list[int]]
    size: int

    def matches(self, q: str, by_cik: bool) -> list[int]:
        """The positions of the entities ``q`` matches, in the answer's order (rank, then the
        order without ``q``)."""
        upper, lower = q.upper(), q.lower()
        found = set(_containing(self.names, self.name_starts, lower))
        found.update(_containing(self.tickers, self.ticker_starts, upper))
        found.update(self.former_tickers.get(upper, ()))
        found.update(self.figis.get(upper, ()))
        if by_cik:
            found.update(self.ciks.get(q.zfill(10), ()))
        return sorted(found, key=lambda at: (self._rank(at, upper, lower), at))

    def _rank(self, at: int, upper: str, lower: str) -> int:
        """``_matching``'s rank of the entity at ``at``."""
        ticker, name = self.ticker_keys[at], self.name_keys[at]
        if ticker is not None and ticker == upper:
            return EXACT_TICKER
        if ticker is not None and ticker.startswith(upper):
            return TICKER_PREFIX
        if name is not None and name.startswith(lower):
            return NAME_PREFIX
        return OTHER


def _containing(text: str, starts: list[int], part: str) -> Iterator[int]:
    """The positions of the entries of ``text`` (joined, each from ``starts``) containing
    ``part``, each once."""
    at = text.find(part)
    while at >= 0:
        entry = bisect.bisect_right(starts, at) - 1
        yield entry
        if entry + 1 >= len(starts):
            return
        at = text.find(part, starts[entry + 1])


def _joined(keys: list[str | None]) -> tuple[str, list[int]]:
    """``keys`` joined by ``SEPARATOR`` (a null as an empty entry), and where each starts."""
    starts, at = [], 0
    for key in keys:
        starts.append(at)
        at += len(key or "") + len(SEPARATOR)
    return SEPARATOR.join(key or "" for key in keys), starts


def _search_index(call: EndpointCall) -> SearchIndex | None:
    """The version's entities from the row store (None when it is off or they do not fit)."""
    return call.row_store.kept(
        (call.version.label, "entities", 0, "search"), functools.partial(_load_index, call)
    )


def _load_index(call: EndpointCall) -> SearchIndex:
    """Every entity of the version with its keys, read once."""
    identity = tuple(call.contract.fields.identity)
    rows, name_keys, ticker_keys = [], [], []
    figis: dict[str, list[int]] = {}
    ciks: dict[str, list[int]] = {}
    for at, row in enumerate(fetch_dicts_of_sql(call.data, _index_sql(identity), {})):
        rows.append({field: row[field] for field in identity})
        name_keys.append(row["name_key"])
        ticker_keys.append(row["ticker_key"])
        if row["figi_key"] is not None:
            figis.setdefault(row["figi_key"], []).append(at)
        if row["cik"] is not None:
            ciks.setdefault(row["cik"], []).append(at)
    positions: dict[int, list[int]] = {}
    for at, row in enumerate(rows):
        positions.setdefault(row["entity_id"], []).append(at)
    former_tickers: dict[str, list[int]] = {}
    for row in fetch_dicts_of_sql(call.data, _former_tickers_sql(), {}):
        former_tickers.setdefault(row["ticker_key"], []).extend(positions.get(row["entity_id"], []))
    names, name_starts = _joined(name_keys)
    tickers, ticker_starts = _joined(ticker_keys)
    return SearchIndex(
        rows,
        name_keys,
        ticker_keys,
        names,
        name_starts,
        tickers,
        ticker_starts,
        figis,
        ciks,
        former_tickers,
        ENTITY_BYTES * len(rows),
    )


@functools.lru_cache(maxsize=4)
def _index_sql(identity: tuple[str, ...]) -> str:
    """Every entity in the order of the answer without ``q``, with the keys ``q`` is compared
    with, computed by DuckDB as the SQL path computes them."""
    keys = [
        exp.alias_(exp.Upper(this=column("ticker")), "ticker_key"),
        exp.alias_(exp.Upper(this=column("figi")), "figi_key"),
    ]
    # the same order as _sql's page without q: rank 0 for every entity
    order = [term for term in load_endpoint_contract(SEARCH).order if term.column != "match_rank"]
    query = (
        exp.select(*dict.fromkeys([*identity, "cik", "name_key"]), *keys)
        .from_(_matching(False, False).subquery("m"))
        .order_by(*order_by(order))
    )
    return query.sql(dialect="duckdb")


@functools.cache
def _former_tickers_sql() -> str:
    """Every ticker an entity had (``_matching``'s former_ticker), upper case."""
    return (
        exp.select("entity_id", exp.alias_(exp.Upper(this=column("ticker")), "ticker_key"))
        .distinct()
        .from_("ticker_history")
        .where(exp.Not(this=exp.Is(this=column("ticker"), expression=exp.Null())))
        .sql(dialect="duckdb")
    )


def handle(call: EndpointCall) -> EndpointAnswer:
    """One page of the matching entities and the total."""
    assert call.page is not None
    q: str = call.params.get("q") or ""
    by_cik = q.isdigit() and len(q) <= 10  # a CIK with or without padding
    held = _search_index(call) if SEPARATOR not in q else None
    if held is not None:
        return _page_from_index(call, held, q, by_cik)
    values: dict[str, Any] = {"q_upper": q.upper(), "q_lower": q.lower()} if q else {}
    if by_cik:
        values["cik"] = q.zfill(10)
    contract = call.contract
    count_sql, page_sql = _sql(
        bool(q), by_cik, tuple(contract.fields.identity), tuple(contract.order)
    )
    (counted,) = fetch_dicts_of_sql(call.data, count_sql, values)
    page = {"page_limit": call.page.limit, "page_offset": call.page.offset}
    rows = fetch_dicts_of_sql(call.data, page_sql, {**values, **page})
    return offset_answer(call, rows, counted["total"])


def _page_from_index(call: EndpointCall, held: SearchIndex, q: str, by_cik: bool) -> EndpointAnswer:
    """One page of the matches and the total, from the version's entities in memory."""
    matched = [held.rows[at] for at in held.matches(q, by_cik)] if q else held.rows
    return offset_page_of(call, matched)


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
