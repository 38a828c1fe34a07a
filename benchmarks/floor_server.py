"""The bare floor of ``/v1/prices``: Starlette + DuckDB + orjson, no key, no quota, no cache.

    .venv/bin/python benchmarks/floor_server.py --db HOME/published/VERSION.duckdb --port 8100

Serves ``GET /v1/prices?entity_id=&start=&end=&limit=`` from a published version's ``prices``
table (read-only): the same rows, fields and order as findata's ``/v1/prices`` with its default
fields (identity, then every selectable field, in the contract's order), in a ``{"data": [...],
"meta": {...}}`` envelope. One uvicorn worker, a DuckDB cursor per thread (here: the event
loop's). ``api_floor.py`` starts it beside ``findata serve`` and checks that its ``data`` equals
findata's before it measures anything.
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
NAMES = tuple(_CONTRACT.fields.by_default)
FIELDS = ", ".join(f'"{name}"' for name in NAMES)
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
    except (KeyError, ValueError) as error:
        return _error(400, f"bad parameter: {error}")
    where, values = ["entity_id = $entity_id"], {"entity_id": entity_id, "limit": limit + 1}
    if start is not None:
        where.append("date >= $start")
        values["start"] = start
    if end is not None:
        where.append("date <= $end")
        values["end"] = end
    sql = (
        f"SELECT {FIELDS} FROM prices WHERE {' AND '.join(where)} "
        "ORDER BY entity_id, date LIMIT $limit"
    )
    fetched = _cursor(request).execute(sql, values).fetchall()
    rows = [dict(zip(NAMES, row, strict=True)) for row in fetched]
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


app = Starlette(routes=[Route("/v1/prices", prices)])


def main() -> None:
    """Serve the floor with one uvicorn worker (uvicorn's defaults, no access log, as
    ``findata serve``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True, help="a published version's .duckdb file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100)
    args = parser.parse_args()
    app.state.database = open_version(Path(args.db))
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
