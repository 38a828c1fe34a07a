"""Aggregated prices (``interval``): how a bucket aggregates, in SQL, and buckets answered from
memory.

A bucket's row depends on the window only at its edges: the first bucket of a window holds the
days from the window's first trading day on, the last one the days up to its last, and every
bucket between them is whole. So for one security and one row shape, DuckDB computes once per
version, with the same aggregates as a request's SQL (``AGGREGATES``), each bucket's row from
each of its days to its end (``from_day``) and from its start to each of its days
(``to_day``); a window's answer is ``from_day`` of its first day, the whole buckets between
(``from_day`` of each bucket's first day), and ``to_day`` of its last day, each row's JSON text
kept as the row store keeps daily rows (``api/row_store.py``). A window inside one bucket whose
both ends cut it, and the ``3d`` interval (runs of trading days counted from the window's first
day), are asked of DuckDB. The sums over floating-point values are ordered by date, so that the
same days give the same bits whichever way the rows reach the aggregate.
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
from dataclasses import dataclass, field

import orjson
import sqlglot
from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall, page_answer
from findata.api.query import column, fetch_dicts_of_sql, slot
from findata.api.responses import json_bytes
from findata.api.row_store import ROW_OVERHEAD_BYTES

#: what a kept trading day costs in a security's buckets, about (its number, its bucket's)
DAY_BYTES = 64

#: calendar buckets of the intervals; 1d is the daily row itself, 3d counts trading days
CALENDAR_BUCKETS = {"1w": "week", "1mo": "month", "3mo": "quarter", "1y": "year"}

#: intervals whose buckets do not depend on the window (all but 3d)
FIXED_BUCKETS = (*CALENDAR_BUCKETS, "6mo")

#: how each field aggregates over a bucket (ordered: arg_min/arg_max by date; sums and products
#: of floating-point values in date order, so that their bits do not depend on the rows' order)
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
    "return_daily": "EXP(SUM(LN(1 + COALESCE(return_daily, 0)) ORDER BY date)) - 1",
    "exchange_code": "ARG_MAX(exchange_code, date)",
    "split_ratio": "PRODUCT(split_ratio ORDER BY date)",
    "dividend": "SUM(dividend ORDER BY date)",
    "market_cap": "ARG_MAX(market_cap, date)",
}


def bucket_of(interval: str) -> exp.Expression:
    """The bucket a row falls in for ``interval`` (rows of one security in one bucket are
    aggregated into one row, dated its last trading day)."""
    if interval in CALENDAR_BUCKETS:
        return exp.func(
            "DATE_TRUNC", exp.Literal.string(CALENDAR_BUCKETS[interval]), column("date")
        )
    if interval == "6mo":
        return sqlglot.parse_one(
            "YEAR(date) * 2 + CASE WHEN MONTH(date) <= 6 THEN 0 ELSE 1 END", dialect="duckdb"
        )
    # 3d: runs of three trading days from the first day in the window
    return sqlglot.parse_one(
        "(ROW_NUMBER() OVER (PARTITION BY entity_id ORDER BY date) - 1) // 3", dialect="duckdb"
    )


def aggregates(fields: list[str]) -> list[exp.Expression]:
    """The aggregate of each of ``fields`` but ``entity_id`` (the group's own)."""
    return [
        exp.alias_(sqlglot.parse_one(AGGREGATES[name], dialect="duckdb"), name)
        for name in fields
        if name != "entity_id"
    ]


@dataclass
class BucketRows:
    """One security's buckets of one row shape: each whole bucket's row, and the rows of the
    buckets a window has cut so far, from and to each of their days."""

    #: each trading day's number, ascending, and the bucket it falls in (0, 1, …)
    days: list[int]
    bucket_at: list[int]
    #: each bucket's first and last trading day (positions in ``days``) and whole row's JSON
    first: list[int]
    last: list[int]
    whole: list[orjson.Fragment]
    size: int
    #: bucket -> its rows from each of its days to its end, and from its start to each day
    cut: dict[int, tuple[list[orjson.Fragment], list[orjson.Fragment]]] = field(
        default_factory=dict
    )

    def positions(self, start: dt.date | None, end: dt.date | None) -> tuple[int, int]:
        """The first and last trading day of the window (positions; first > last: none)."""
        first = 0 if start is None else bisect.bisect_left(self.days, start.toordinal())
        last = len(self.days) - 1
        if end is not None:
            last = bisect.bisect_right(self.days, end.toordinal()) - 1
        return first, last

    def edge_buckets(self, first: int, last: int) -> list[int]:
        """The buckets the window from ``first`` to ``last`` cuts (their cut rows needed)."""
        cut = []
        if self.first[self.bucket_at[first]] != first:
            cut.append(self.bucket_at[first])
        if self.last[self.bucket_at[last]] != last and self.bucket_at[last] not in cut:
            cut.append(self.bucket_at[last])
        return [bucket for bucket in cut if bucket not in self.cut]

    def window(self, first: int, last: int) -> list[orjson.Fragment] | None:
        """The rows of the window from day ``first`` to ``last`` (positions), once the buckets
        it cuts are in ``cut``; None when one bucket holds it, cut at both ends."""
        if first > last:
            return []
        head, tail = self.bucket_at[first], self.bucket_at[last]
        from_first = self._from(head, first)
        if head == tail:
            if self.last[tail] == last:
                return [from_first]
            if self.first[head] == first:
                return [self._to(tail, last)]
            return None
        return [from_first, *self.whole[head + 1 : tail], self._to(tail, last)]

    def _from(self, bucket: int, day: int) -> orjson.Fragment:
        if self.first[bucket] == day:
            return self.whole[bucket]
        return self.cut[bucket][0][day - self.first[bucket]]

    def _to(self, bucket: int, day: int) -> orjson.Fragment:
        if self.last[bucket] == day:
            return self.whole[bucket]
        return self.cut[bucket][1][day - self.first[bucket]]


def page_of_buckets(
    call: EndpointCall,
    entity_ids: list[int],
    sqls: tuple[str, str],
    shape: object,
    window: tuple[dt.date | None, dt.date | None],
) -> EndpointAnswer | None:
    """The page of the buckets of ``entity_ids`` (in that order) in ``window``, from the row
    store (``sqls``: ``whole_buckets_sql``'s and ``cut_buckets_sql``'s); None when the store is
    off, a security's buckets do not fit it, or the window sits inside one bucket cut at both
    ends (the caller asks DuckDB)."""
    assert call.page is not None
    rows: list[orjson.Fragment] = []
    served: set[int] = set()
    first, last = call.page.offset, call.page.offset + call.page.limit
    for entity_id in entity_ids:
        key = (call.version.label, "prices", entity_id, shape)
        held = call.row_store.kept(key, functools.partial(_whole, call, sqls[0], entity_id))
        if held is None:
            return None
        days = held.positions(*window)
        if days[0] <= days[1]:
            for bucket in held.edge_buckets(*days):
                added = _cut(call, sqls[1], entity_id, held, bucket)
                call.row_store.grew(key, held, added)
        buckets = held.window(*days)
        if buckets is None:
            return None
        if len(rows) < last and len(rows) + len(buckets) > first:
            served.add(entity_id)  # some of its buckets fall on the page
        rows += buckets
    page, following = rows[first:last], rows[last] if len(rows) > last else None
    answer = page_answer(call, page, following)
    answer.entity_ids = sorted(served)
    return answer


def _whole(call: EndpointCall, sql: str, entity_id: int) -> BucketRows:
    """One security's whole buckets from ``whole_buckets_sql``'s SQL."""
    days: list[int] = []
    bucket_at: list[int] = []
    first: list[int] = []
    last: list[int] = []
    whole: list[orjson.Fragment] = []
    size = 0
    for bucket, row in enumerate(fetch_dicts_of_sql(call.data, sql, {"entity_0": entity_id})):
        first.append(len(days))
        days += [day.toordinal() for day in row["days"]]
        bucket_at += [bucket] * len(row["days"])
        last.append(len(days) - 1)
        text = json_bytes(row["bucket_row"])
        whole.append(orjson.Fragment(text))
        size += len(text) + ROW_OVERHEAD_BYTES + DAY_BYTES * len(row["days"])
    return BucketRows(days, bucket_at, first, last, whole, size)


def _cut(call: EndpointCall, sql: str, entity_id: int, held: BucketRows, bucket: int) -> int:
    """Add ``bucket``'s rows from and to each of its days to ``held``; the bytes added."""
    values = {
        "entity_0": entity_id,
        "first_day": dt.date.fromordinal(held.days[held.first[bucket]]),
        "last_day": dt.date.fromordinal(held.days[held.last[bucket]]),
    }
    from_day: list[orjson.Fragment] = []
    to_day: list[orjson.Fragment] = []
    size = 0
    for row in fetch_dicts_of_sql(call.data, sql, values):
        texts = json_bytes(row["from_day"]), json_bytes(row["to_day"])
        from_day.append(orjson.Fragment(texts[0]))
        to_day.append(orjson.Fragment(texts[1]))
        size += len(texts[0]) + len(texts[1]) + 2 * ROW_OVERHEAD_BYTES
    held.cut[bucket] = (from_day, to_day)
    held.size += size
    return size


def _struct(fields: list[str], table: str) -> exp.Expression:
    """A struct of ``fields`` of ``table`` (a row as one value)."""
    return exp.Struct(
        expressions=[
            exp.PropertyEQ(this=exp.to_identifier(name), expression=column(name, table))
            for name in fields
        ]
    )


def whole_buckets_sql(history: exp.Select, interval: str, fields: list[str]) -> str:
    """Each bucket of one security's ``history`` (its daily rows, restated or not), in date
    order: its trading days and its row of ``fields`` (a struct)."""
    labelled = exp.select("*", exp.alias_(bucket_of(interval), "bucket")).from_(
        exp.alias_(history.subquery(), "history")
    )
    buckets = (
        exp.select(
            column("entity_id"),
            column("bucket"),
            exp.alias_(sqlglot.parse_one("LIST(date ORDER BY date)", dialect="duckdb"), "days"),
            *aggregates(fields),
        )
        .from_(exp.alias_(labelled.subquery(), "labelled"))
        .group_by(column("entity_id"), column("bucket"))
    )
    query = (
        exp.select(column("days", "b"), exp.alias_(_struct(fields, "b"), "bucket_row"))
        .from_(exp.alias_(buckets.subquery(), "b"))
        .order_by(column("bucket", "b"))
    )
    return query.sql(dialect="duckdb")


def cut_buckets_sql(history: exp.Select, fields: list[str]) -> str:
    """For each trading day of one bucket of one security's ``history`` (its days from
    ``$first_day`` to ``$last_day``), in date order: the bucket's row from that day to its end
    and from its start to that day (structs of ``fields``)."""
    days = (
        exp.select("*")
        .from_(exp.alias_(history.subquery(), "history"))
        .where(exp.Between(this=column("date"), low=slot("first_day"), high=slot("last_day")))
    )

    def partial(condition: str) -> exp.Select:
        return (
            exp.select(column("day", "cuts"), column("entity_id", "rows"), *aggregates(fields))
            .from_(exp.alias_(days.subquery(), "rows"))
            .join(
                exp.alias_(
                    exp.select(exp.alias_(column("date"), "day"))
                    .from_(exp.alias_(days.subquery(), "days"))
                    .subquery(),
                    "cuts",
                ),
                on=f"rows.date {condition} cuts.day",
            )
            .group_by(column("day", "cuts"), column("entity_id", "rows"))
        )

    query = (
        exp.select(
            exp.alias_(_struct(fields, "f"), "from_day"),
            exp.alias_(_struct(fields, "t"), "to_day"),
        )
        .from_(exp.alias_(partial(">=").subquery(), "f"))
        .join(exp.alias_(partial("<=").subquery(), "t"), on="f.day = t.day")
        .order_by(column("day", "f"))
    )
    return query.sql(dialect="duckdb")
