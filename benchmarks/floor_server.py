"""The bare floor of ``/v1/prices``: Starlette + DuckDB + orjson, no key, no quota, no cache.

    .venv/bin/python benchmarks/floor_server.py --db HOME/published/VERSION.duckdb --port 8100

Serves ``GET /v1/prices?entity_id=&start=&end=&limit=&fields=&adjust=`` from a published version's
``prices`` rows, copied at start into a native DuckDB table (in memory) sorted by (entity_id,
date): the layout a bare server would choose, not the version's Parquet parts. The same rows,
fields and order as findata's ``/v1/prices`` (identity fields, then the selectable ones asked for
with ``fields``, every one by default, in the contract's order; ``adjust=split`` restates them
in today's shares), in a ``{"data": [...], "meta": {...}}`` envelope. One uvicorn worker, a
DuckDB cursor per thread (here: the event loop's). ``api_floor.py`` starts it beside ``findata
serve`` and checks that its ``data`` equals findata's before it measures anything.
"""

from __future__ import annotations

import argparse
import datetime as dt
import threading
from pathlib import Path

import duckdb
import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from findata.contracts.endpoints import load_endpoint_contract
from findata.published.versions import open_version

#: the contract's identity fields, then the selectable ones, in its order (findata's default)
_CONTRACT = load_endpoint_contract("prices")
IDENTITY, SELECTABLE = tuple(_CONTRACT.fields.identity), tuple(_CONTRACT.fields.selectable)
#: the fields ``adjust=split`` divides by the split factor
SPLIT_DIVIDED = ("open", "high", "low", "close")
DEFAULT_LIMIT, MAX_LIMIT = 1000, 5000

_local = threading.local()


def _cursor(request: Request) -> duckdb.DuckDBPyConnection:
    """This thread's cursor on the version (DuckDB cursors are not shared between threads)."""
    cursor = getattr(_local, "cursor", None)
    if cursor is None:
        cursor = _local.cursor = request.app.state.database.cursor()
    return cursor


def _error(status: int, detail: str) -> Response:
    return Response(orjson.dumps({"detail": detail}), status, media_type="application/json")


async def prices(request: Request) -> Response:
    """One security's daily rows in ``[start, end]``, ordered by date, one page.

    The query runs on the event loop's thread: on one core that is the fastest simple form (a
    sync endpoint, run in Starlette's thread pool, measured 5-15% slower here)."""
    query = request.query_params
    try:
        entity_id = int(query["entity_id"])
        start = dt.date.fromisoformat(query["start"]) if query.get("start") else None
        end = dt.date.fromisoformat(query["end"]) if query.get("end") else None
        limit = min(int(query.get("limit") or DEFAULT_LIMIT), MAX_LIMIT)
        names = _fields(query.get("fields"))
        adjusted = {"split": True, "none": False}[query.get("adjust") or "none"]
    except (KeyError, ValueError) as error:
        return _error(400, f"bad parameter: {error}")
    where, values = ["entity_id = $entity_id"], {"entity_id": entity_id, "limit": limit + 1}
    if start is not None:
        where.append("date >= $start")
        values["start"] = start
    if end is not None:
        where.append("date <= $end")
        values["end"] = end
    selected = ", ".join(_column(name, adjusted) for name in names)
    sql = (
        f"SELECT {selected} FROM prices WHERE {' AND '.join(where)} "
        "ORDER BY entity_id, date LIMIT $limit"
    )
    fetched = _cursor(request).execute(sql, values).fetchall()
    rows = [dict(zip(names, row, strict=True)) for row in fetched]
    more = len(rows) > limit
    data = rows[:limit]
    meta = {
        "entity_ids_requested": [entity_id],
        "count": len(data),
        "limit": limit,
        "has_more": more,
        "next_cursor": None,
    }
    return Response(orjson.dumps({"data": data, "meta": meta}), media_type="application/json")


def _column(name: str, adjusted: bool) -> str:
    """A field as selected: with ``adjust=split``, prices divided by the row's split factor and
    the volume multiplied by it (findata's SQL path does the same)."""
    if adjusted and name in SPLIT_DIVIDED:
        return f'"{name}" / split_factor AS "{name}"'
    if adjusted and name == "volume":
        return 'CAST(ROUND(volume * split_factor) AS BIGINT) AS "volume"'
    return f'"{name}"'


def _fields(asked: str | None) -> tuple[str, ...]:
    """Identity fields, then the selectable ones named in ``asked`` (all when None)."""
    if not asked:
        return IDENTITY + SELECTABLE
    chosen = tuple(name for name in SELECTABLE if name in asked.split(","))
    if not chosen:
        raise ValueError(f"no valid field in {asked!r}")
    return IDENTITY + chosen


def native_copy(version: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB holding the version's ``prices`` as a native table, sorted by
    (entity_id, date) (DuckDB's zone maps then skip every other security's row groups)."""
    with open_version(version) as published:
        rows = published.sql("SELECT * FROM prices ORDER BY entity_id, date").to_arrow_table()
    database = duckdb.connect()
    database.register("published_prices", rows)
    database.execute("CREATE TABLE prices AS SELECT * FROM published_prices")
    database.unregister("published_prices")
    return database


app = Starlette(routes=[Route("/v1/prices", prices)])


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
