"""``/v1/prices``: daily bars, optionally restated in today's shares (``adjust=split``) and
aggregated into buckets (``interval``). The SQL is built once per shape of request (fields,
number of securities, adjustment, interval, which bounds): sqlglot's building and copying cost
more than DuckDB's query on this endpoint's typical request. Daily rows (any fields, as traded
or restated) are answered from each security's rows kept serialised in memory
(``api/row_store.py``), loaded with that same SQL once per version and row shape: a row's values
do not depend on the window asked for. Aggregated rows (``interval``) do (a bucket at the
window's edge holds only the days inside it): they are asked of DuckDB every time."""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

import sqlglot
from sqlglot import exp

from findata.api.calls import (
    EndpointAnswer,
    EndpointCall,
    ordered_page_of_sql,
    paged,
)
from findata.api.memory_pages import page_from_memory
from findata.api.query import column, fetch_dicts_of_sql, order_by, slot
from findata.contracts.endpoints import OrderTerm

#: the prices restated by ``adjust=split``: each divided by the row's published split_factor
#: (the product of the ratios of every later split, as the pipeline computed it for adj_close in
#: transforms/models/intermediate/int_price_split_factors.sql), the volume multiplied by it
ADJUSTED_PRICES = ("open", "high", "low", "close")

#: calendar buckets of the intervals; 1d is the daily row itself, 3d counts trading days
CALENDAR_BUCKETS = {"1w": "week", "1mo": "month", "3mo": "quarter", "1y": "year"}

#: how each field aggregates over a bucket (ordered: arg_min/arg_max by date)
AGGREGATES = {
    "ticker": "ARG_MAX(ticker, date)",
    "entity_name": "ARG_MAX(entity_name, date)",
    "gics_sector": "ARG_MAX(gics_sector, date)",
    "date": "MAX(date)",
    "price_basis": "ARG_MAX(price_basis, date)",
    "open": "ARG_MIN(open, date)",
    "high": "MAX(high)",
    "low": "MIN(low)",
    "close": "ARG_MAX(close, date)",
    "adj_close": "ARG_MAX(adj_close, date)",
    "volume": "SUM(volume)",
    "shares_outstanding": "ARG_MAX(shares_outstanding, date)",
    "return_daily": "EXP(SUM(LN(1 + COALESCE(return_daily, 0)))) - 1",
    "exchange_code": "ARG_MAX(exchange_code, date)",
    "split_ratio": "PRODUCT(split_ratio)",
    "dividend": "SUM(dividend)",
    "market_cap": "ARG_MAX(market_cap, date)",
}


@dataclass(frozen=True)
class Shape:
    """What the SQL of a prices request depends on (its values are bound per request)."""

    fields: tuple[str, ...]
    securities: int
    split_adjusted: bool
    interval: str | None
    has_start: bool
    has_end: bool


def handle(call: EndpointCall) -> EndpointAnswer:
    """Rows of the resolved securities in the window, a page at a time."""
    assert call.subjects is not None and call.page is not None
    start, end = call.window()
    entity_ids = sorted(call.subjects.entity_ids)
    interval = call.params.get("interval")
    shape = Shape(
        fields=tuple(call.selected_fields()),
        securities=len(entity_ids),
        split_adjusted=call.params.get("adjust") == "split",
        interval=None if interval == "1d" else interval,
        has_start=start is not None,
        has_end=end is not None,
    )
    if _answered_from_memory(call, shape):
        # one security's whole history of the request's row shape: the entry's load and its key
        history = replace(shape, securities=1, has_start=False, has_end=False)
        load = functools.partial(_security_history, call, history)
        answer = page_from_memory(
            call, "prices", history, entity_ids, load, (start, end), date_field="date"
        )
        if answer is not None:
            return answer
    values: dict[str, Any] = {f"entity_{n}": e for n, e in enumerate(entity_ids)}
    if start is not None:
        values["start"] = start
    if end is not None:
        values["end"] = end
    return ordered_page_of_sql(call, _sql(shape, tuple(call.contract.order)), values)


def _answered_from_memory(call: EndpointCall, shape: Shape) -> bool:
    """Daily rows in the contract's order are answered from the row store's copy of each
    security's rows of the request's row shape, when the store is on."""
    return (
        call.row_store.enabled
        and shape.interval is None
        and [term.column for term in call.contract.order] == ["entity_id", "date"]
    )


def _security_history(call: EndpointCall, history: Shape, entity_id: int) -> list[dict[str, Any]]:
    """Every row of one security in date order, of the ``history`` shape (one security, no
    window): what the row store keeps."""
    sql = _unpaged_sql(history, tuple(call.contract.order))
    return fetch_dicts_of_sql(call.data, sql, {"entity_0": entity_id})


@functools.lru_cache(maxsize=1024)
def _sql(shape: Shape, order: tuple[OrderTerm, ...]) -> str:
    """The SQL of one page of a request of ``shape``, built once."""
    return paged(_ordered_query(shape, order))


@functools.lru_cache(maxsize=256)
def _unpaged_sql(shape: Shape, order: tuple[OrderTerm, ...]) -> str:
    """The SQL of every row of a request of ``shape``, built once."""
    return _ordered_query(shape, order).sql(dialect="duckdb")


def _ordered_query(shape: Shape, order: tuple[OrderTerm, ...]) -> exp.Select:
    """The rows of a request of ``shape`` in the contract's order."""
    entities = [slot(f"entity_{n}") for n in range(shape.securities)]
    base = exp.select("*").from_("prices").where(column("entity_id").isin(*entities))
    if shape.split_adjusted:
        base = _restated_in_todays_shares(base)
    windowed = exp.select("*").from_(exp.alias_(base.subquery(), "base"))
    if shape.has_start:
        windowed = windowed.where(exp.GTE(this=column("date"), expression=slot("start")))
    if shape.has_end:
        windowed = windowed.where(exp.LTE(this=column("date"), expression=slot("end")))
    fields = list(shape.fields)
    if shape.interval:
        rows_from = _bucketed(windowed, shape.interval, fields)
    else:
        rows_from = exp.select(*fields).from_(exp.alias_(windowed.subquery(), "windowed"))
    return (
        exp.select(*fields)
        .from_(exp.alias_(rows_from.subquery(), "answer"))
        .order_by(*order_by(order))
    )


def _restated_in_todays_shares(base: exp.Select) -> exp.Select:
    """Prices divided and volume multiplied by each row's split factor (the dataset's
    ``split_factor``: the splits after its date), the same factor ``adj_close`` divides by."""
    replaced = [
        exp.alias_(exp.Div(this=column(name), expression=column("split_factor")), name)
        for name in ADJUSTED_PRICES
    ]
    replaced.append(
        exp.alias_(
            sqlglot.parse_one("CAST(ROUND(volume * split_factor) AS BIGINT)", dialect="duckdb"),
            "volume",
        )
    )
    star = exp.Star(**{"replace": replaced})
    return exp.select(star).from_(exp.alias_(base.subquery(), "factored"))


def _bucketed(windowed: exp.Select, interval: str, fields: list[str]) -> exp.Select:
    """One row per security and bucket, dated the bucket's last trading day."""
    if interval in CALENDAR_BUCKETS:
        bucket = exp.func(
            "DATE_TRUNC", exp.Literal.string(CALENDAR_BUCKETS[interval]), column("date")
        )
    elif interval == "6mo":
        bucket = sqlglot.parse_one(
            "YEAR(date) * 2 + CASE WHEN MONTH(date) <= 6 THEN 0 ELSE 1 END", dialect="duckdb"
        )
    else:  # 3d: runs of three trading days from the first day in the window
        bucket = sqlglot.parse_one(
            "(ROW_NUMBER() OVER (PARTITION BY entity_id ORDER BY date) - 1) // 3", dialect="duckdb"
        )
    labelled = exp.select("*", exp.alias_(bucket, "bucket")).from_(
        exp.alias_(windowed.subquery(), "windowed")
    )
    aggregates = [
        exp.alias_(sqlglot.parse_one(AGGREGATES[name], dialect="duckdb"), name)
        for name in fields
        if name != "entity_id"
    ]
    return (
        exp.select(column("entity_id"), *aggregates)
        .from_(exp.alias_(labelled.subquery(), "labelled"))
        .group_by(column("entity_id"), column("bucket"))
    )
