"""Helpers shared by the endpoint tests: a GET with the key header, the spec's error bodies, page
walkers over cursor and offset pages, the Free floor, and reads of the published version the API
serves (the tests' oracle)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import duckdb
import httpx

from findata.api.data_requests import UPGRADE_TEXT
from tests.api.server import RunningApi

Row = dict[str, Any]

#: the 400 text for a ``quarter`` that is not a quarter end (holdings and manager holdings)
QUARTER_TEXT = (
    "Invalid quarter: '{}' (expected a quarter end: YYYY-03-31, YYYY-06-30, YYYY-09-30 or "
    "YYYY-12-31)"
)


CHANGE_CURSOR = re.compile(r"chg_\d{12}")


#: headers that differ between two answers of the same request: the moment, and the request id
MOMENT_HEADERS = {"date", "x-ratelimit-reset", "age", "x-request-id"}


def get(api: RunningApi, key: str | None, path: str, **params: Any) -> httpx.Response:
    """GET ``path`` with ``params``, sending ``key`` as ``X-API-Key`` (no header for ``None``)."""
    headers = {"X-API-Key": key} if key is not None else {}
    with api.client() as client:
        return client.get(path, params=params, headers=headers)


def every_page_as_sent(
    api: RunningApi, key: str, path: str, params: dict[str, Any]
) -> list[tuple[int, dict[str, str], bytes]]:
    """Every page of a request (following its ``next_cursor``) as the server sent it: status,
    headers (but ``MOMENT_HEADERS``), body bytes; for comparing two servers' answers."""
    pages: list[tuple[int, dict[str, str], bytes]] = []
    cursor = None
    for _ in range(60):
        response = get(api, key, path, **params, **({"cursor": cursor} if cursor else {}))
        headers = {k: v for k, v in response.headers.items() if k not in MOMENT_HEADERS}
        pages.append((response.status_code, headers, response.content))
        if response.status_code != 200:
            break
        body = response.json()  # the cursor is top-level or in meta, by endpoint
        cursor = body.get("next_cursor") or (body.get("meta") or {}).get("next_cursor")
        if cursor is None:
            break
    return pages


def ok_body(response: httpx.Response) -> dict[str, Any]:
    """The JSON body of a response that must be a 200."""
    assert response.status_code == 200, response.text
    return response.json()


def _assert_error(response: httpx.Response, status: int, code: str, detail: str) -> None:
    """A response of ``status`` whose body is exactly the spec's error body."""
    assert response.status_code == status, response.text
    assert response.json() == {"error": code, "code": code, "status": status, "detail": detail}


def assert_bad_request(response: httpx.Response, detail: str) -> None:
    """A 400 whose body is exactly the spec's bad_request body with ``detail``."""
    _assert_error(response, 400, "bad_request", detail)


def assert_upgrade_required(response: httpx.Response, capability: str) -> None:
    """A 402 whose body is exactly the spec's upgrade_required body for ``capability``."""
    _assert_error(
        response, 402, "upgrade_required", f"{UPGRADE_TEXT[capability]} Upgrade to use it."
    )


def walk_cursor_pages(
    api: RunningApi,
    key: str,
    path: str,
    *,
    counted: bool = False,
    max_pages: int = 1000,
    **params: Any,
) -> list[dict[str, Any]]:
    """Every page body of a cursor-paged query, following ``meta.next_cursor``."""
    # each page: a 200; meta.has_more says whether meta.next_cursor is set; its count is its
    # number of rows: meta.count, or for a `counted` envelope the top-level count (with the
    # top-level next_cursor equal to the meta one, and every page but the last full at limit)
    pages: list[dict[str, Any]] = []
    cursor = None
    for _ in range(max_pages):
        body = ok_body(get(api, key, path, **params, **({"cursor": cursor} if cursor else {})))
        cursor = body["meta"]["next_cursor"]
        assert body["meta"]["has_more"] is (cursor is not None)
        if counted:
            assert body["next_cursor"] == cursor
            assert body["count"] == len(body["data"])
        else:
            assert body["meta"]["count"] == len(body["data"])
        pages.append(body)
        if cursor is None:
            return pages
        if counted:
            assert body["count"] == int(params["limit"])  # only the last page is short
    raise AssertionError("paging did not end")


def walk_bare_counted_pages(
    api: RunningApi, key: str, path: str, **params: Any
) -> list[dict[str, Any]]:
    """Every page of a counted cursor query whose meta holds only has_more and next_cursor (and
    the change_cursor of a keyed data response)."""
    pages = walk_cursor_pages(api, key, path, counted=True, **params)
    for body in pages:
        assert without_change_cursor(body["meta"]) == {
            "has_more": body["next_cursor"] is not None,
            "next_cursor": body["next_cursor"],
        }
    return pages


def without_change_cursor(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` less its ``change_cursor``, which every keyed data response carries."""
    rest = dict(meta)
    assert CHANGE_CURSOR.fullmatch(rest.pop("change_cursor")), meta
    return rest


def walk_cursor_rows(api: RunningApi, key: str, path: str, **params: Any) -> list[Row]:
    """Every row of a cursor-paged query, its pages checked as by ``walk_cursor_pages``."""
    return rows_of(walk_cursor_pages(api, key, path, **params))


def walk_offset_pages(
    api: RunningApi,
    key: str | None,
    path: str,
    limit: int,
    *,
    max_pages: int = 1000,
    **params: Any,
) -> list[Row]:
    """Every row of an offset-paged query, stepping ``offset`` by ``limit`` while ``has_more``."""
    # each page: a 200 with this limit and offset in meta, the same total, a count of its rows
    # (at most limit, exactly limit but on the last page) and has_more true while rows remain;
    # the rows walked are `total` rows
    rows: list[Row] = []
    total = None
    for _ in range(max_pages):
        offset = len(rows)
        body = ok_body(get(api, key, path, limit=limit, offset=offset, **params))
        meta, page = body["meta"], body["data"]
        total = meta["total"] if total is None else total
        assert meta["total"] == total
        assert (meta["limit"], meta["offset"]) == (limit, offset)
        assert meta["count"] == len(page) <= limit
        assert meta["has_more"] is (offset + meta["count"] < total)
        assert len(page) == limit or not meta["has_more"]
        rows += page
        if not meta["has_more"]:
            assert len(rows) == total
            return rows
    raise AssertionError("paging did not end")


def rows_of(pages: list[dict[str, Any]]) -> list[Row]:
    """The rows of walked pages, in order."""
    return [row for page in pages for row in page["data"]]


def before_as_of(scenarios: dict[str, Any], days: int) -> str:
    """The date ``days`` before the demo's ``as_of`` (ISO). Tests take their data windows from
    the data's own dates, which move with the day the demo is generated, never from the
    calendar: a window written as a fixed date holds only on the days whose demo covers it."""
    return (dt.date.fromisoformat(scenarios["as_of"]) - dt.timedelta(days=days)).isoformat()


def free_floor(today: dt.date) -> dt.date:
    """The Free floor: the same day a year back (28 February for 29 February)."""
    if (today.month, today.day) == (2, 29):
        return today.replace(year=today.year - 1, day=28)
    return today.replace(year=today.year - 1)


def assert_entity_id_rules(
    api: RunningApi, key: str, endpoint: str, with_ticker: str, entity_id: int
) -> None:
    """``entity_id`` must be positive integers, and not beside a ticker in the path."""
    for bad in ("0", "abc", "1.5", "-3"):
        assert_bad_request(
            get(api, key, endpoint, entity_id=bad),
            f"Invalid entity_id: '{bad}'. Must be a positive integer.",
        )
    assert_bad_request(
        get(api, key, with_ticker, entity_id=entity_id),
        "Provide either a ticker in the path or an entity_id parameter, not both.",
    )


def assert_ambiguous_candidates_are_objects(
    api: RunningApi, key: str, endpoint: str, case: dict[str, Any]
) -> None:
    """A 409 on ``endpoint`` lists the ambiguous ticker's candidates as objects."""
    body = get(api, key, f"{endpoint}/{case['ticker']}", end=case["date"]).json()
    candidates = body["candidates"][case["ticker"]]
    assert all(isinstance(c, dict) for c in candidates)
    assert sorted(c["entity_id"] for c in candidates) == sorted(case["entity_ids"])


def assert_free_plan_history_floor(
    api: RunningApi, free_key: str, endpoint: str, scenarios: dict[str, Any]
) -> tuple[dt.date, dict[str, Any]]:
    """Free on a period endpoint: one ticker or entity_id per request, rows from the floor on
    with its header and warning, and a window before the floor empty with its own warning.
    Returns the floor and the body of the plain ticker's default answer."""
    plain = scenarios["plain"]["ticker"]
    assert_bad_request(
        get(api, free_key, f"{endpoint}/{plain},{scenarios['restatement']['ticker']}"),
        "Free tier allows 1 ticker per request. Upgrade to Pro for up to 100 tickers per request.",
    )
    assert_bad_request(
        get(api, free_key, endpoint, entity_id="1000001,1000002"),
        "Free tier allows 1 entity_id per request. Upgrade to Pro for up to 100 entity_id values "
        "per request.",
    )
    floor = free_floor(api.clock.now().date())
    response = get(api, free_key, f"{endpoint}/{plain}")
    assert response.status_code == 200
    assert response.headers["X-Data-Floor"] == floor.isoformat()
    body = response.json()
    assert body["data"], "the demo has periods ending inside the last year"
    assert min(row["period_end"] for row in body["data"]) >= floor.isoformat()
    assert body["warnings"] == [
        f"Free plan history starts at {floor.isoformat()} (one year before today, UTC); rows "
        "before it are not returned. Upgrade to Pro for full history."
    ]
    long_before = (floor - dt.timedelta(days=730)).isoformat()
    end_before = (floor - dt.timedelta(days=365)).isoformat()
    before = get(api, free_key, f"{endpoint}/{plain}", start=long_before, end=end_before)
    assert before.json()["data"] == []
    assert before.json()["warnings"] == [
        f"Free plan history starts at {floor.isoformat()} (one year before today, UTC); the "
        "requested window ends before it, so there are no rows. Upgrade to Pro for full history."
    ]
    return floor, body


def issuer_of(api: RunningApi, key: str, ticker: str) -> int:
    """The one issuer a ticker resolves to today."""
    body = get(api, key, f"/v1/resolve/{ticker}").json()
    issuers = {entity["issuer_entity_id"] for entity in body["data"][ticker]["entities"]}
    assert len(issuers) == 1
    return issuers.pop()


def without_name(rows: list[Row]) -> list[Row]:
    """The rows without their ``entity_name``."""
    return [{k: v for k, v in row.items() if k != "entity_name"} for row in rows]


def json_dates(row: Row) -> Row:
    """The row with its dates as ISO text, as the API serves them."""
    return {k: v.isoformat() if isinstance(v, dt.date) else v for k, v in row.items()}


def query_published(api: RunningApi, sql: str, **values: Any) -> list[Row]:
    """Rows straight from the published version the API serves (the test's oracle)."""
    published = api.app.state.published
    lease = published.lease(published.current())
    try:
        result = lease.cursor.execute(sql, values)
        names = [d[0] for d in result.description]
        return [dict(zip(names, values, strict=True)) for values in result.fetchall()]
    finally:
        lease.release()


def fetch_rows(connection: duckdb.DuckDBPyConnection, sql: str, *args: Any) -> list[Row]:
    """The rows of a query on a DuckDB connection, as dicts by column name."""
    result = connection.execute(sql, list(args))
    names = [d[0] for d in result.description]
    return [dict(zip(names, row, strict=True)) for row in result.fetchall()]


def issuers_of_entities(connection: duckdb.DuckDBPyConnection, entity_ids: list[int]) -> list[int]:
    """The distinct issuers of two entities (an ambiguous ticker's), sorted."""
    return sorted(
        row[0]
        for row in connection.execute(
            "SELECT DISTINCT issuer_entity_id FROM entities WHERE entity_id IN (?, ?)",
            entity_ids,
        ).fetchall()
    )
