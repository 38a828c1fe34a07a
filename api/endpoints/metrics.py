"""``/v1/metrics``: each period's ratios as known on the answer date (``as_of``, else today), for
a company or for one share class of it (a class ticker: the class's own price).

The framework resolves subjects at company grain so that an issuer ``entity_id`` selects the
company (request rule 10); the spec's 409 rule for metrics is stricter for tickers — a ticker
naming more than one security is ambiguous, a ticker shared by the classes of one company too
— so this handler turns such tickers into ambiguous ones (409 when nothing else resolved).

The SQL of the rows and of the share-class lookup is built once per shape of request (numbers of
companies and targets, which bounds, ``as_of`` or not): building it with sqlglot cost more than
DuckDB's query. With the row store on, each company's rows (every row known at any time, in the
answer's order) and the version's share classes are kept (``IssuerMetrics``, ``ShareClasses``),
and a request takes the rows of its window known on its date by the SQL's rule, byte for byte
(``tests/api/test_row_store.py``).
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall, page_answer, paged, split_page
from findata.api.endpoints.fundamentals import path_tickers
from findata.api.errors import ApiError
from findata.api.query import Binder, column, fetch_dicts, fetch_dicts_of_sql, order_by, slot
from findata.api.resolution import SHARE_CLASS_WARNING, Resolution, resolve_tickers
from findata.api.subjects import HINT, ambiguous_detail
from findata.contracts.endpoints import OrderTerm

#: the dataset's columns served as they are (``entity_id`` and ``entity_name`` are added)
METRIC_COLUMNS = [
    "issuer_entity_id", "period_end", "period_type", "fiscal_year", "fiscal_period", "known_from",
    "filing_date", "accession", "gross_margin", "operating_margin", "net_margin",
    "revenue_growth_yoy", "eps", "eps_ttm", "book_value_per_share", "price_entity_id",
    "price_date", "price_close", "market_cap", "pe_ratio", "pb_ratio",
]  # fmt: skip
#: the mart's window for the period-end close (int_period_end_prices: within 7 days)
PRICE_WINDOW = dt.timedelta(days=7)
AMBIGUOUS_WARNING = (
    "Ticker {ticker} is ambiguous on {on} and was not served; see meta.tickers_ambiguous and "
    "pass entity_id=<id>."
)


@dataclass(frozen=True)
class Target:
    """What one subject selects: the company, or one share class of it."""

    entity_id: int  # the rows' entity_id: the issuer's, or the class security's
    issuer_entity_id: int
    class_security: int | None


#: what a kept metrics row or share class costs, about (a dict of ~25 values)
ROW_BYTES = 2000


@dataclass(frozen=True)
class IssuerMetrics:
    """Every metrics row of one company (each period's rows as known at each time), in the
    answer's order within an entity, each with ``entity_name`` and ``is_latest``."""

    rows: list[dict[str, Any]]
    size: int

    def known_on(
        self, as_of: dt.date | None, start: dt.date | None, end: dt.date | None
    ) -> list[dict[str, Any]]:
        """The rows of periods ending from ``start`` to ``end`` (None: unbounded): each
        period's latest known on ``as_of``, or the latest of all without it (``_sql``'s rule)."""
        rows = [
            row
            for row in self.rows
            if (start is None or row["period_end"] >= start)
            and (end is None or row["period_end"] <= end)
        ]
        if as_of is None:
            return [row for row in rows if row["is_latest"]]
        latest: dict[tuple[Any, Any], dict[str, Any]] = {}
        for row in rows:
            if row["known_from"] > as_of:
                continue
            period = (row["period_end"], row["period_type"])
            held = latest.get(period)
            if held is None or _later(row, held):
                latest[period] = row
        chosen = {id(row) for row in latest.values()}
        return [row for row in rows if id(row) in chosen]


def _later(row: dict[str, Any], than: dict[str, Any]) -> bool:
    """``row`` comes before ``than`` in ``ORDER BY known_from DESC, accession DESC`` (nulls
    last)."""
    if row["known_from"] != than["known_from"]:
        return bool(row["known_from"] > than["known_from"])
    mine, theirs = row["accession"], than["accession"]
    return theirs is None or (mine is not None and mine > theirs)


@dataclass(frozen=True)
class ShareClasses:
    """Every entity's share class in a version (null for a company's only common stock)."""

    classes: dict[int, str | None]
    size: int


def handle(call: EndpointCall) -> EndpointAnswer:
    """One row per period of each selected company or class in the window, a page at a time."""
    assert call.subjects is not None and call.page is not None
    targets = _targets(call)
    fields = call.selected_fields()
    start, end = call.window()
    as_of: dt.date | None = call.params.get("as_of")
    if call.row_store.enabled:
        answer = _page_from_memory(call, targets, fields, as_of, (start, end))
        if answer is not None:
            return answer
    issuers = sorted({t.issuer_entity_id for t in targets})
    sql = _sql(
        len(issuers),
        len(targets),
        (start is not None, end is not None),
        as_of is not None,
        tuple(call.contract.order),
    )
    values: dict[str, Any] = {f"issuer_{n}": issuer for n, issuer in enumerate(issuers)}
    for n, target in enumerate(targets):
        values[f"target_{n}"] = target.entity_id
        values[f"target_issuer_{n}"] = target.issuer_entity_id
    bound = {"start": start, "end": end, "as_of": as_of}
    values.update({name: value for name, value in bound.items() if value is not None})
    values.update(page_limit=call.page.limit + 1, page_offset=call.page.offset)
    served, following = split_page(call, fetch_dicts_of_sql(call.data, sql, values))
    classes = {t.entity_id for t in targets if t.class_security is not None}
    _price_classes(call, [row for row in served if row["entity_id"] in classes])
    return page_answer(call, [{name: row[name] for name in fields} for row in served], following)


def _page_from_memory(
    call: EndpointCall,
    targets: list[Target],
    fields: list[str],
    as_of: dt.date | None,
    window: tuple[dt.date | None, dt.date | None],
) -> EndpointAnswer | None:
    """The page from each company's kept rows; None when a company's rows do not fit the
    store (the caller asks DuckDB)."""
    assert call.page is not None
    if [term.column for term in call.contract.order][:1] != ["entity_id"]:
        return None  # rows are concatenated by target: only an order led by entity_id
    first, last = call.page.offset, call.page.offset + call.page.limit
    rows: list[dict[str, Any]] = []
    for target in sorted(targets, key=lambda t: t.entity_id):
        held = call.row_store.kept(
            (call.version.label, "metrics", target.issuer_entity_id, "every row"),
            functools.partial(_issuer_metrics, call, target.issuer_entity_id),
        )
        if held is None:
            return None
        rows += [{**row, "entity_id": target.entity_id} for row in held.known_on(as_of, *window)]
        if len(rows) > last:
            break  # one row past the page is all the paging needs
    served, following = rows[first:last], rows[last] if len(rows) > last else None
    classes = {t.entity_id for t in targets if t.class_security is not None}
    _price_classes(call, [row for row in served if row["entity_id"] in classes])
    return page_answer(call, [{name: row[name] for name in fields} for row in served], following)


def _issuer_metrics(call: EndpointCall, issuer: int) -> IssuerMetrics:
    """Every metrics row of ``issuer``, read once."""
    rows = fetch_dicts_of_sql(
        call.data, _issuer_sql(tuple(call.contract.order)), {"issuer": issuer}
    )
    return IssuerMetrics(rows, ROW_BYTES * len(rows))


@functools.lru_cache(maxsize=4)
def _issuer_sql(order: tuple[OrderTerm, ...]) -> str:
    """Every row of one company, in the answer's order within an entity (``_sql``'s columns;
    ``entity_id`` is the target's, set per request)."""
    within = [term for term in order if term.column != "entity_id"]
    return (
        exp.select(
            "e.name AS entity_name",
            *(f"m.{name} AS {name}" for name in METRIC_COLUMNS),
            "m.is_latest AS is_latest",
        )
        .from_("metrics AS m")
        .join("entities AS e", on="e.entity_id = m.issuer_entity_id", join_type="left")
        .where(exp.EQ(this=column("issuer_entity_id", "m"), expression=slot("issuer")))
        .order_by(*order_by(within, "m"))
        .sql(dialect="duckdb")
    )


@functools.lru_cache(maxsize=256)
def _sql(
    issuers: int,
    targets: int,
    bounds: tuple[bool, bool],
    has_as_of: bool,
    order: tuple[OrderTerm, ...],
) -> str:
    """The SQL of one page of a request of this shape (``bounds``: whether ``start`` and
    ``end`` are bound), built once."""
    picked = (
        exp.select("*")
        .from_("metrics")
        .where(column("issuer_entity_id").isin(*(slot(f"issuer_{n}") for n in range(issuers))))
    )
    if bounds[0]:
        picked = picked.where(exp.GTE(this=column("period_end"), expression=slot("start")))
    if bounds[1]:
        picked = picked.where(exp.LTE(this=column("period_end"), expression=slot("end")))
    if not has_as_of:
        picked = picked.where(column("is_latest"))
    else:
        # each period's latest row known on as_of: nothing known later is read
        picked = picked.where(exp.LTE(this=column("known_from"), expression=slot("as_of"))).qualify(
            "ROW_NUMBER() OVER (PARTITION BY issuer_entity_id, period_end, period_type "
            "ORDER BY known_from DESC, accession DESC) = 1"
        )
    chosen = exp.values(
        [(slot(f"target_{n}"), slot(f"target_issuer_{n}")) for n in range(targets)],
        alias="t",
        columns=["entity_id", "issuer_entity_id"],
    )
    rows_from = (
        exp.select(
            "t.entity_id AS entity_id",
            "e.name AS entity_name",
            *(f"m.{name} AS {name}" for name in METRIC_COLUMNS),
        )
        .from_(exp.alias_(picked.subquery(), "m"))
        .join(chosen, on="t.issuer_entity_id = m.issuer_entity_id")
        .join("entities AS e", on="e.entity_id = m.issuer_entity_id", join_type="left")
    )
    return paged(
        exp.select("*").from_(exp.alias_(rows_from.subquery(), "answer")).order_by(*order_by(order))
    )


def _targets(call: EndpointCall) -> list[Target]:
    """The company or class each served subject selects; shared tickers become ambiguous.

    ``call.subjects`` is adjusted so ``meta`` tells the truth: a class ticker resolves to its
    class security, a ticker naming several securities is listed in ``tickers_ambiguous``."""
    subjects = call.subjects
    assert subjects is not None and call.subject_date is not None
    on = call.subject_date
    tickers = path_tickers(call)
    shared = [name for name in subjects.resolved if len(subjects.securities.get(name, [])) > 1]
    if tickers and shared:
        _make_ambiguous(call, subjects, shared, on)
    if not subjects.resolved:
        raise ApiError(
            "ambiguous_ticker",
            ambiguous_detail(list(subjects.ambiguous), on),
            candidates=subjects.ambiguous,
            hint=HINT,
        )
    singles = [ids[0] for ids in subjects.securities.values() if len(ids) == 1]
    share_classes = _share_classes(call, singles)
    targets: dict[int, Target] = {}
    for name, issuers in subjects.resolved.items():
        named = subjects.securities.get(name, [])
        if len(named) == 1 and share_classes.get(named[0]) is not None:
            target = Target(named[0], issuers[0], named[0])
            subjects.resolved[name] = [named[0]]
        else:
            target = Target(issuers[0], issuers[0], None)
        targets.setdefault(target.entity_id, target)
    return list(targets.values())


def _make_ambiguous(
    call: EndpointCall, subjects: Resolution, shared: list[str], on: dt.date
) -> None:
    """Spec, "Errors" 409: on metrics a ticker naming several securities (a ticker shared by
    the classes of one company too) is ambiguous; its candidates are those securities."""
    by_security = resolve_tickers(call.directory, shared, on, "security")
    for ticker in shared:
        del subjects.resolved[ticker]
        subjects.securities.pop(ticker, None)
        subjects.ambiguous[ticker] = by_security.ambiguous.get(ticker, [])
        company_level = SHARE_CLASS_WARNING.split("{name}")[0].format(ticker=ticker)
        call.warnings[:] = [w for w in call.warnings if not w.startswith(company_level)]
        call.warnings.append(AMBIGUOUS_WARNING.format(ticker=ticker, on=on.isoformat()))


def _share_classes(call: EndpointCall, securities: list[int]) -> dict[int, str | None]:
    """The share class of each security (null for a company's only class of common stock)."""
    if not securities:
        return {}
    held = call.row_store.kept(
        (call.version.label, "entities", 0, "share classes"),
        functools.partial(_every_share_class, call),
    )
    if held is not None:
        return {entity: held.classes[entity] for entity in securities if entity in held.classes}
    values = {f"security_{n}": entity for n, entity in enumerate(securities)}
    rows = fetch_dicts_of_sql(call.data, _share_classes_sql(len(securities)), values)
    return {row["entity_id"]: row["share_class"] for row in rows}


def _every_share_class(call: EndpointCall) -> ShareClasses:
    """Every entity's share class, read once."""
    rows = fetch_dicts_of_sql(call.data, "SELECT entity_id, share_class FROM entities", {})
    classes = {row["entity_id"]: row["share_class"] for row in rows}
    return ShareClasses(classes, ROW_BYTES // 10 * len(classes))


@functools.lru_cache(maxsize=64)
def _share_classes_sql(securities: int) -> str:
    return (
        exp.select("entity_id", "share_class")
        .from_("entities")
        .where(column("entity_id").isin(*(slot(f"security_{n}") for n in range(securities))))
        .sql(dialect="duckdb")
    )


def _price_classes(call: EndpointCall, rows: list[dict[str, Any]]) -> None:
    """Replace the price-based fields of class rows by the class's own: its last close on or
    before period_end within 7 days, P/E and P/B per share of the class (market_cap stays the
    company's, all classes)."""
    if not rows:
        return
    binder = Binder()
    first = min(row["period_end"] for row in rows) - PRICE_WINDOW
    last = max(row["period_end"] for row in rows)
    query = (
        exp.select("entity_id", "date", "close")
        .from_("prices")
        .where(column("entity_id").isin(*binder.each(sorted({r["entity_id"] for r in rows}))))
        .where(exp.GTE(this=column("date"), expression=binder(first)))
        .where(exp.LTE(this=column("date"), expression=binder(last)))
    )
    closes: dict[int, list[tuple[dt.date, float]]] = {}
    for price in fetch_dicts(call.data, query, binder):
        closes.setdefault(price["entity_id"], []).append((price["date"], price["close"]))
    for row in rows:
        end = row["period_end"]
        sessions = [
            (day, close)
            for day, close in closes.get(row["entity_id"], [])
            if end - PRICE_WINDOW <= day <= end
        ]
        day, close = max(sessions) if sessions else (None, None)
        eps_ttm, per_share_book = row["eps_ttm"], row["book_value_per_share"]
        row["price_entity_id"] = row["entity_id"]
        row["price_date"] = day
        row["price_close"] = close
        row["pe_ratio"] = close / eps_ttm if close is not None and eps_ttm and eps_ttm > 0 else None
        row["pb_ratio"] = (
            close / per_share_book
            if close is not None and per_share_book and per_share_book > 0
            else None
        )
