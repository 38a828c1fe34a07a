"""The bare floor of findata's API: Starlette + DuckDB + orjson, no key, no quota, no cache.

    .venv/bin/python benchmarks/floor_server.py --db HOME/published/VERSION.duckdb --port 8100

At start, the published version's tables are copied into native DuckDB tables in memory, each
sorted by its natural key (prices by entity_id and date, and so on): the layout a bare server
would choose, not the version's views over Parquet parts. Each route then runs the SQL findata
runs for that request (the prices SQL is built by findata's own ``_sql``; the other queries are
written out as findata's handlers generate them) and answers ``{"data": [...], "meta": {...}}``
with the same rows, fields and order as findata's ``data``. Subjects come pre-resolved: where
findata takes a ticker, the floor takes the entity id the ticker names (resolving a ticker is
findata's work, not the floor's). Queries findata runs only to validate a request or to fill
``meta`` (the index codes, the holdings coverage check, whether a manager exists, the roster's
grain) are not run here.

- ``/v1/prices?entity_id=A,B&start=&end=&limit=&fields=&adjust=&interval=``
- ``/v1/fundamentals?entity_id=ISSUER&as_of=&period=&limit=``
- ``/v1/metrics?entity_id=ISSUER&as_of=&limit=``
- ``/v1/insiders?entity_id=ISSUER&start=&end=&limit=``
- ``/v1/holdings?entity_id=SECURITY&limit=``
- ``/v1/managers/{manager_id}/holdings?quarter=&limit=``
- ``/v1/index/{code}?as_of=&limit=&offset=`` (count and page, as findata's offset paging)
- ``/v1/resolve/{ticker}/{entity_id}?date=`` (the entity the ticker names on ``date``)
- ``/v1/search?q=&limit=&offset=`` (count and page)

One uvicorn worker, a DuckDB cursor per thread (here: the event loop's). ``api_floor.py`` and
``api_shapes.py`` start it beside ``findata serve`` and check that its ``data`` equals
findata's before they measure anything.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import threading
from pathlib import Path
from typing import Any

import duckdb
import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from findata.api.endpoints.prices import Shape, _sql
from findata.contracts.endpoints import load_endpoint_contract
from findata.published.versions import open_version

#: the contract's identity fields, then the selectable ones, in its order (findata's default)
_PRICES = load_endpoint_contract("prices")
IDENTITY, SELECTABLE = tuple(_PRICES.fields.identity), tuple(_PRICES.fields.selectable)
PRICES_ORDER = tuple(_PRICES.order)
DEFAULT_LIMIT, MAX_LIMIT = 1000, 5000

#: each table copied, and the natural key it is sorted by
TABLES = {
    "prices": "entity_id, date",
    "fundamentals": "issuer_entity_id, period_end, known_from, period_type, accession",
    "metrics": "issuer_entity_id, period_end, filing_date, period_type, accession",
    "insider_transactions": "entity_id, transaction_date, document_id, line_sequence",
    "institutional_holdings": "entity_id, report_date, manager_id, accession, line_number",
    "managers": "manager_id",
    "entities": "entity_id",
    "ticker_history": "ticker, valid_from, entity_id",
    "index_membership": "index_code, added_date, membership_id",
    "succession_links": "change_date, from_ticker",
}

_local = threading.local()


def _cursor(request: Request) -> duckdb.DuckDBPyConnection:
    """This thread's cursor on the copy (DuckDB cursors are not shared between threads)."""
    cursor = getattr(_local, "cursor", None)
    if cursor is None:
        cursor = _local.cursor = request.app.state.database.cursor()
    return cursor


def _rows(request: Request, sql: str, values: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of ``sql`` as dicts in column order."""
    result = _cursor(request).execute(sql, values)
    names = [d[0] for d in result.description]
    return [dict(zip(names, row, strict=True)) for row in result.fetchall()]


def _scalar(request: Request, sql: str, values: dict[str, Any]) -> Any:
    """The one value of ``sql``."""
    return _cursor(request).execute(sql, values).fetchall()[0][0]


def _answer(data: Any, meta: dict[str, Any]) -> Response:
    return Response(orjson.dumps({"data": data, "meta": meta}), media_type="application/json")


def _error(status: int, detail: str) -> Response:
    return Response(orjson.dumps({"detail": detail}), status, media_type="application/json")


def _page(rows: list[dict[str, Any]], limit: int) -> Response:
    """A cursor page: ``rows`` were read with one more than ``limit`` to know whether more
    follow."""
    data = rows[:limit]
    meta = {"count": len(data), "limit": limit, "has_more": len(rows) > limit}
    return _answer(data, meta)


def _date(query: Any, name: str) -> dt.date | None:
    return dt.date.fromisoformat(query[name]) if query.get(name) else None


def _limit(query: Any, default: int = DEFAULT_LIMIT, most: int = MAX_LIMIT) -> int:
    return min(int(query.get("limit") or default), most)


# The queries (each as findata's handler generates it for the request; placeholders named)

FUNDAMENTALS = load_endpoint_contract("fundamentals")
FUNDAMENTAL_SOURCES = {"entity_id": "f.issuer_entity_id", "entity_name": "e.name"}


@functools.cache
def fundamentals_sql(as_of: bool, period: bool) -> str:
    """``api/endpoints/fundamentals.py``: one company's latest figures per period (as known on
    ``$as_of`` when given), every field, one page."""
    fields = [*FUNDAMENTALS.fields.identity, *FUNDAMENTALS.fields.selectable]
    selected = []
    for name in fields:
        if name == "superseded_on" and as_of:
            selected.append("CASE WHEN f.superseded_on <= $as_of THEN f.superseded_on END")
        else:
            selected.append(FUNDAMENTAL_SOURCES.get(name, f"f.{name}"))
    where = ["f.issuer_entity_id IN ($entity_id)"]
    if period:
        where.append("f.period_type = $period")
    if as_of:
        where.append(
            "(f.known_from <= $as_of AND (f.superseded_on IS NULL OR f.superseded_on > $as_of))"
        )
    else:
        where.append("f.superseded_on IS NULL")
    columns = ", ".join(
        f"{source} AS {name}" for source, name in zip(selected, fields, strict=True)
    )
    return (
        f"SELECT {', '.join(fields)} FROM (SELECT {columns} FROM fundamentals AS f "
        "LEFT JOIN entities AS e ON e.entity_id = f.issuer_entity_id "
        f"WHERE {' AND '.join(where)}) AS answer "
        "ORDER BY entity_id ASC, period_end ASC, known_from ASC, period_type ASC, accession ASC "
        "LIMIT $limit"
    )


METRICS = load_endpoint_contract("metrics")


@functools.cache
def metrics_sql(as_of: bool) -> str:
    """``api/endpoints/metrics.py``: one company's rows, each period's latest as known on
    ``$as_of`` (the dataset's latest without it), every field, one page."""
    picked = "SELECT * FROM metrics WHERE issuer_entity_id IN ($entity_id)"
    if as_of:
        picked += (
            " AND known_from <= $as_of QUALIFY ROW_NUMBER() OVER (PARTITION BY issuer_entity_id,"
            " period_end, period_type ORDER BY known_from DESC, accession DESC) = 1"
        )
    else:
        picked += " AND is_latest"
    served = [
        name for name in METRICS.fields.by_default if name not in ("entity_id", "entity_name")
    ]
    columns = ", ".join(f"m.{name} AS {name}" for name in served)
    fields = ", ".join(METRICS.fields.by_default)
    return (
        f"SELECT {fields} FROM (SELECT t.entity_id AS entity_id, e.name AS entity_name, {columns} "
        f"FROM ({picked}) AS m "
        "JOIN (VALUES ($entity_id, $entity_id)) AS t(entity_id, issuer_entity_id) "
        "ON t.issuer_entity_id = m.issuer_entity_id "
        "LEFT JOIN entities AS e ON e.entity_id = m.issuer_entity_id) AS answer "
        "ORDER BY entity_id ASC, period_end ASC, filing_date ASC, period_type ASC, accession ASC "
        "LIMIT $limit"
    )


INSIDERS_SQL = (
    f"SELECT {', '.join(load_endpoint_contract('insiders').fields.identity)} "
    "FROM insider_transactions WHERE ((entity_id IN ($entity_id) AND transaction_date >= $start) "
    "AND transaction_date <= $end) AND is_coded "
    "ORDER BY transaction_date DESC, document_id DESC, is_derivative DESC, line_sequence DESC "
    "LIMIT $limit"
)


def _holdings_columns(contract: str) -> str:
    return ", ".join(
        "m.manager_name AS manager_name" if name == "manager_name" else f"h.{name}"
        for name in load_endpoint_contract(contract).fields.identity
    )


HOLDINGS_SQL = (
    f"SELECT {_holdings_columns('holdings')} FROM institutional_holdings AS h "
    "LEFT JOIN managers AS m ON m.manager_id = h.manager_id "
    "WHERE h.entity_id IN ($entity_id) AND h.is_current "
    "ORDER BY h.report_date DESC, h.shares DESC, h.manager_id DESC, h.accession ASC, "
    "h.line_number ASC LIMIT $limit"
)
MANAGER_HOLDINGS_SQL = (
    f"SELECT {_holdings_columns('manager_holdings')} FROM institutional_holdings AS h "
    "LEFT JOIN managers AS m ON m.manager_id = h.manager_id "
    "WHERE h.manager_id = $manager_id AND h.report_date = $quarter AND h.is_current "
    "ORDER BY h.report_date DESC, h.value_usd DESC, h.accession ASC, h.line_number ASC "
    "LIMIT $limit"
)

#: ``api/endpoints/index.py``: the roster on ``$as_of``, each member with its own ticker then
ROSTER = (
    "SELECT m.entity_id, COALESCE(l.ticker, m.ticker) AS ticker, m.entity_name, m.added_date, "
    "CASE WHEN m.removed_date <= $as_of THEN m.removed_date END AS removed_date, "
    "m.member_grain, m.membership_id FROM index_membership AS m LEFT JOIN (SELECT entity_id, "
    "ticker FROM ticker_history WHERE ticker_kind = 'own' AND valid_from <= $as_of QUALIFY "
    "ROW_NUMBER() OVER (PARTITION BY entity_id ORDER BY valid_from DESC, ticker) = 1) AS l "
    "ON l.entity_id = m.entity_id WHERE (m.index_code = $code AND m.added_date <= $as_of) "
    "AND (m.removed_date IS NULL OR m.removed_date > $as_of)"
)
ROSTER_COUNT_SQL = f"SELECT COUNT(*) FROM ({ROSTER}) AS answer"
ROSTER_PAGE_SQL = (
    f"SELECT {', '.join(load_endpoint_contract('index').fields.identity)} FROM ({ROSTER}) "
    "AS answer ORDER BY entity_name ASC, membership_id ASC LIMIT $limit OFFSET $offset"
)

#: ``api/endpoints/search.py``: every entity matching ``q``, ranked
SEARCH_MATCHING = (
    "SELECT *, CASE WHEN UPPER(ticker) = $upper THEN 0 WHEN STARTS_WITH(UPPER(ticker), $upper) "
    "THEN 1 WHEN STARTS_WITH(LOWER(name), $lower) THEN 2 ELSE 3 END AS match_rank, "
    "LOWER(name) AS name_key FROM entities WHERE UPPER(ticker) = $upper OR "
    "STARTS_WITH(UPPER(ticker), $upper) OR STARTS_WITH(LOWER(name), $lower) OR "
    "CONTAINS(LOWER(name), $lower) OR CONTAINS(UPPER(ticker), $upper) OR EXISTS(SELECT 1 FROM "
    "ticker_history AS h WHERE h.entity_id = entities.entity_id AND UPPER(h.ticker) = $upper) "
    "OR UPPER(figi) = $upper"
)
SEARCH_ALL = "SELECT *, 0 AS match_rank, LOWER(name) AS name_key FROM entities"
SEARCH_FIELDS = ", ".join(load_endpoint_contract("search").fields.identity)

#: ``api/endpoints/resolve.py``: the entity, the ticker's period, memberships, succession
RESOLVE_ENTITY_COLUMNS = (
    "entity_id", "name", "entity_type", "country", "figi", "cik", "entity_grain",
    "issuer_entity_id", "share_class", "instrument_type", "exchange", "sic_code",
    "sic_description", "naics_code", "gics_sector", "gics_group", "classification_as_of",
)  # fmt: skip
CLASSIFICATIONS = (
    "sic_code", "sic_description", "naics_code", "gics_sector", "gics_group",
    "classification_as_of",
)  # fmt: skip
RESOLVE_ENTITY_SQL = (
    f"SELECT {', '.join(RESOLVE_ENTITY_COLUMNS)} FROM entities WHERE entity_id IN ($entity_id)"
)
RESOLVE_PERIOD_SQL = (
    "SELECT ticker, entity_id, valid_from, valid_to, share_class, exchange FROM ticker_history "
    "WHERE (ticker = $ticker AND entity_id = $entity_id) AND valid_from <= $on "
    "ORDER BY valid_from NULLS FIRST"
)
RESOLVE_MEMBERSHIPS_SQL = (
    "SELECT entity_id, index_code, index_name, added_date, CASE WHEN removed_date <= $on THEN "
    "removed_date END AS removed_date FROM index_membership WHERE entity_id IN ($entity_id) AND "
    "(added_date IS NULL OR added_date <= $on) ORDER BY entity_id NULLS FIRST, index_code NULLS "
    "FIRST, added_date NULLS FIRST, membership_id NULLS FIRST"
)
RESOLVE_SUCCESSION_SQL = (
    "SELECT link_type, from_ticker, from_entity_id, from_valid_from, from_valid_to, to_ticker, "
    "to_entity_id, change_date, to_valid_to FROM succession_links WHERE from_ticker IN ($ticker) "
    "OR to_ticker IN ($ticker) ORDER BY change_date NULLS FIRST, from_ticker NULLS FIRST, "
    "from_entity_id NULLS FIRST, to_ticker NULLS FIRST, to_entity_id NULLS FIRST"
)


# The routes. Each query runs on the event loop's thread: on one core that is the fastest simple
# form (a sync endpoint, run in Starlette's thread pool, measured 5-15% slower here).


async def prices(request: Request) -> Response:
    """The securities' daily rows (or ``interval`` buckets) in ``[start, end]``, one page."""
    query = request.query_params
    try:
        entity_ids = sorted(int(part) for part in query["entity_id"].split(","))
        start, end = _date(query, "start"), _date(query, "end")
        limit = _limit(query)
        names = _fields(query.get("fields"))
        adjusted = {"split": True, "none": False}[query.get("adjust") or "none"]
        interval = query.get("interval") or None
    except (KeyError, ValueError) as error:
        return _error(400, f"bad parameter: {error}")
    shape = Shape(
        fields=names,
        securities=len(entity_ids),
        split_adjusted=adjusted,
        interval=None if interval == "1d" else interval,
        has_start=start is not None,
        has_end=end is not None,
    )
    values: dict[str, Any] = {f"entity_{n}": e for n, e in enumerate(entity_ids)}
    if start is not None:
        values["start"] = start
    if end is not None:
        values["end"] = end
    values |= {"page_limit": limit + 1, "page_offset": 0}
    rows = _rows(request, _sql(shape, PRICES_ORDER), values)
    data = rows[:limit]
    meta = {
        "entity_ids_requested": entity_ids,
        "count": len(data),
        "limit": limit,
        "has_more": len(rows) > limit,
        "next_cursor": None,
    }
    return _answer(data, meta)


def _fields(asked: str | None) -> tuple[str, ...]:
    """Identity fields, then the selectable ones named in ``asked`` (all when None)."""
    if not asked:
        return IDENTITY + SELECTABLE
    chosen = tuple(name for name in SELECTABLE if name in asked.split(","))
    if not chosen:
        raise ValueError(f"no valid field in {asked!r}")
    return IDENTITY + chosen


async def fundamentals(request: Request) -> Response:
    """One company's statements (``as_of``, ``period``), one page."""
    query = request.query_params
    try:
        values: dict[str, Any] = {"entity_id": int(query["entity_id"])}
        as_of, period = _date(query, "as_of"), query.get("period")
        limit = _limit(query)
    except (KeyError, ValueError) as error:
        return _error(400, f"bad parameter: {error}")
    if as_of is not None:
        values["as_of"] = as_of
    if period in ("annual", "quarterly"):
        values["period"] = period
    values["limit"] = limit + 1
    sql = fundamentals_sql(as_of is not None, "period" in values)
    return _page(_rows(request, sql, values), limit)


async def metrics(request: Request) -> Response:
    """One company's metrics per period (``as_of``), one page."""
    query = request.query_params
    try:
        values: dict[str, Any] = {"entity_id": int(query["entity_id"])}
        as_of = _date(query, "as_of")
        limit = _limit(query, 20, 100)
    except (KeyError, ValueError) as error:
        return _error(400, f"bad parameter: {error}")
    if as_of is not None:
        values["as_of"] = as_of
    values["limit"] = limit + 1
    return _page(_rows(request, metrics_sql(as_of is not None), values), limit)


async def insiders(request: Request) -> Response:
    """One company's coded Form 4 lines in ``[start, end]``, newest first, one page."""
    query = request.query_params
    try:
        limit = _limit(query)
        values = {
            "entity_id": int(query["entity_id"]),
            "start": dt.date.fromisoformat(query["start"]),
            "end": dt.date.fromisoformat(query["end"]),
            "limit": limit + 1,
        }
    except (KeyError, ValueError) as error:
        return _error(400, f"bad parameter: {error}")
    return _page(_rows(request, INSIDERS_SQL, values), limit)


async def holdings(request: Request) -> Response:
    """Current 13F positions in one security, every quarter, one page."""
    query = request.query_params
    try:
        limit = _limit(query)
        values = {"entity_id": int(query["entity_id"]), "limit": limit + 1}
    except (KeyError, ValueError) as error:
        return _error(400, f"bad parameter: {error}")
    return _page(_rows(request, HOLDINGS_SQL, values), limit)


async def manager_holdings(request: Request) -> Response:
    """One manager's current positions of one quarter, one page."""
    query = request.query_params
    try:
        limit = _limit(query)
        values = {
            "manager_id": int(request.path_params["manager_id"]),
            "quarter": dt.date.fromisoformat(query["quarter"]),
            "limit": limit + 1,
        }
    except (KeyError, ValueError) as error:
        return _error(400, f"bad parameter: {error}")
    return _page(_rows(request, MANAGER_HOLDINGS_SQL, values), limit)


async def index_roster(request: Request) -> Response:
    """An index's members on ``as_of``: the total, and one offset page."""
    query = request.query_params
    try:
        members = {"code": request.path_params["code"].lower(), "as_of": _date(query, "as_of")}
        limit, offset = _limit(query, 1000, 1000), int(query.get("offset") or 0)
    except (KeyError, ValueError) as error:
        return _error(400, f"bad parameter: {error}")
    if members["as_of"] is None:
        return _error(400, "the floor serves rosters as of a date only")
    total = _scalar(request, ROSTER_COUNT_SQL, members)
    rows = _rows(request, ROSTER_PAGE_SQL, {**members, "limit": limit, "offset": offset})
    meta = {"count": len(rows), "limit": limit, "offset": offset, "total": total}
    return _answer(rows, meta)


async def search(request: Request) -> Response:
    """Entities matching ``q``, ranked: the total, and one offset page."""
    query = request.query_params
    try:
        q = query.get("q") or ""
        limit, offset = _limit(query, 50, 500), int(query.get("offset") or 0)
    except ValueError as error:
        return _error(400, f"bad parameter: {error}")
    matching, values = SEARCH_ALL, {}
    if q:
        matching, values = SEARCH_MATCHING, {"upper": q.upper(), "lower": q.lower()}
        if q.isdigit() and len(q) <= 10:
            matching += " OR cik = $cik"  # a CIK with or without its padding
            values["cik"] = q.zfill(10)
    total = _scalar(request, f"SELECT COUNT(*) FROM ({matching}) AS m", values)
    page = (
        f"SELECT {SEARCH_FIELDS} FROM ({matching}) AS m "
        "ORDER BY match_rank ASC, name_key ASC, entity_id ASC LIMIT $limit OFFSET $offset"
    )
    rows = _rows(request, page, {**values, "limit": limit, "offset": offset})
    meta = {"count": len(rows), "limit": limit, "offset": offset, "total": total}
    return _answer(rows, meta)


async def resolve(request: Request) -> Response:
    """What one ticker named on ``date``: the entity it names (given), its period of the
    ticker, index memberships as known then, and the ticker's succession links."""
    try:
        ticker = request.path_params["ticker"].upper()
        entity_id = int(request.path_params["entity_id"])
        on = dt.date.fromisoformat(request.query_params["date"])
    except (KeyError, ValueError) as error:
        return _error(400, f"bad parameter: {error}")
    (row,) = _rows(request, RESOLVE_ENTITY_SQL, {"entity_id": entity_id})
    values = {"ticker": ticker, "entity_id": entity_id, "on": on}
    period = _rows(request, RESOLVE_PERIOD_SQL, values)[-1]  # the last begun by ``on``
    memberships = [
        {
            "index": member["index_code"].upper(),
            "index_name": member["index_name"],
            "added": member["added_date"],
            "removed": member["removed_date"],
        }
        for member in _rows(request, RESOLVE_MEMBERSHIPS_SQL, {"entity_id": entity_id, "on": on})
    ]
    links = _rows(request, RESOLVE_SUCCESSION_SQL, {"ticker": ticker})
    entity = {
        "entity_id": row["entity_id"],
        "name": row["name"],
        "entity_type": row["entity_type"],
        "country": row["country"],
        "figi": row["figi"],
        "cik": row["cik"],
        "entity_grain": row["entity_grain"],
        "issuer_entity_id": row["issuer_entity_id"],
        "share_class": period["share_class"],
        "instrument_type": row["instrument_type"],
        "exchange": period["exchange"] or row["exchange"],
        "ticker_valid_from": period["valid_from"],
        "ticker_valid_to": period["valid_to"],
        "classifications": {name: row[name] for name in CLASSIFICATIONS},
        "index_membership": memberships,
    }
    data = {ticker: {"entities": [entity], "succession": links}}
    return _answer(data, {"tickers_requested": [ticker], "resolved_as_of": on.isoformat()})


def native_copy(version: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB holding the version's tables (those it has of :data:`TABLES`) as
    native tables, each sorted by its natural key (DuckDB's zone maps then skip the row groups
    of every other security)."""
    database = duckdb.connect()
    with open_version(version) as published:
        present = {
            name
            for (name,) in published.execute(
                "SELECT table_name FROM information_schema.tables"
            ).fetchall()
        }
        for table, key in TABLES.items():
            if table not in present:
                continue
            rows = published.sql(f"SELECT * FROM {table} ORDER BY {key}").to_arrow_table()
            database.register("published_rows", rows)
            database.execute(f"CREATE TABLE {table} AS SELECT * FROM published_rows")
            database.unregister("published_rows")
    return database


app = Starlette(
    routes=[
        Route("/v1/prices", prices),
        Route("/v1/fundamentals", fundamentals),
        Route("/v1/metrics", metrics),
        Route("/v1/insiders", insiders),
        Route("/v1/holdings", holdings),
        Route("/v1/managers/{manager_id}/holdings", manager_holdings),
        Route("/v1/index/{code}", index_roster),
        Route("/v1/resolve/{ticker}/{entity_id}", resolve),
        Route("/v1/search", search),
    ]
)


def main() -> None:
    """Serve the floor with one uvicorn worker (uvicorn's defaults, no access log, as
    ``findata serve``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True, help="a published version's .duckdb file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100)
    args = parser.parse_args()
    app.state.database = native_copy(Path(args.db))
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        workers=1,
        access_log=False,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
