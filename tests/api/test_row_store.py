"""Answers from the row store (``api/row_store.py``, ``api/memory_pages.py``: prices, insiders,
holdings, manager holdings; fundamentals', resolve's and index rosters' own entries) are byte for
byte the answers of the SQL path: the session's server (row store on, the default) and a second
server on the same published home with the store off, and a third with a budget so small that it
evicts on almost every request, are asked the same requests over real HTTP, every page."""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from findata.api.app import create_app
from findata.api.row_store import EntityRows, RowStore
from findata.settings import Settings
from tests.api.endpoints.api_calls import before_as_of, every_page_as_sent, get
from tests.api.server import RunningApi, serve, start_clock


def _served_with_store(published_home: Path, row_store_mb: float) -> Iterator[RunningApi]:
    clock = start_clock()
    app = create_app(Settings(home=published_home, row_store_mb=row_store_mb), clock)
    with serve(app, clock) as running:
        yield running


@pytest.fixture(scope="module")
def api_with_store(published_home: Path) -> Iterator[RunningApi]:
    """The API with the row store on (the default budget), of this module alone: the session's
    server may hold cached answers of the same URLs from other tests, which differ in their
    usage headers (a cache hit counts no rows)."""
    yield from _served_with_store(published_home, Settings.model_fields["row_store_mb"].default)


@pytest.fixture(scope="module")
def api_without_store(published_home: Path) -> Iterator[RunningApi]:
    """The API on the same published home with the row store off (every request asks DuckDB)."""
    yield from _served_with_store(published_home, 0)


@pytest.fixture(scope="module")
def api_tiny_store(published_home: Path) -> Iterator[RunningApi]:
    """The API with a store that holds about two securities at a time."""
    yield from _served_with_store(published_home, 1.2)


def _same_on_every_server(
    servers: list[RunningApi],
    keys: list[str],
    path: str,
    params: dict[str, Any],
    status: int | None = 200,
) -> list[tuple[int, dict[str, str], bytes]]:
    """Every page of one request as each server sent it, checked equal to the store-off
    server's (the second) and, unless None, of ``status``; the first server's pages."""
    answers = [
        every_page_as_sent(server, key, path, params)
        for server, key in zip(servers, keys, strict=True)
    ]
    if status is not None:
        assert answers[0][0][0] == status, (path, params, answers[0][0])
    for answer in answers:
        assert answer == answers[1], (path, params)
    return answers[0]


def _requests(scenarios: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Requests the store answers (daily rows: any fields, as traded or restated in today's
    shares), over the demo's cases."""
    plain, delisted = scenarios["plain"], scenarios["delisted"]
    classes = scenarios["share_classes"]["class_tickers"]
    renamed, split = scenarios["renamed"], scenarios["split"]
    window = {"start": before_as_of(scenarios, 200), "end": before_as_of(scenarios, 20)}
    return [
        (f"/v1/prices/{plain['ticker']}", {}),
        (f"/v1/prices/{plain['ticker']}", {"limit": 5000}),
        (f"/v1/prices/{plain['ticker']}", window),
        (f"/v1/prices/{plain['ticker']}", {"start": scenarios["as_of"]}),
        (f"/v1/prices/{plain['ticker']}", {"end": "1990-01-01"}),
        (f"/v1/prices/{plain['ticker']}", {"start": "2999-01-01", "end": "2999-12-31"}),
        (f"/v1/prices/{plain['ticker']}", {"interval": "1d", "adjust": "none", **window}),
        (f"/v1/prices/{','.join(classes)}", {**window, "limit": 7}),
        (f"/v1/prices/{plain['ticker']},{delisted['ticker']}", {"limit": 5000}),
        (f"/v1/prices/{delisted['ticker']}", {"end": delisted["last_date"]}),
        (f"/v1/prices/{renamed['old_ticker']}", {"end": renamed["change_date"]}),
        (f"/v1/prices/{split['ticker']}", {"start": split["date"], "limit": 3}),
        ("/v1/prices", {"entity_id": f"{plain['entity_id']},{delisted['entity_id']}", **window}),
        ("/v1/prices", {"entity_id": str(plain["entity_id"]), "limit": 1}),
        (f"/v1/prices/{plain['ticker']}", {"fields": "close", **window}),
        (f"/v1/prices/{plain['ticker']}", {"fields": "open,high,low,close,adj_close,volume"}),
        (f"/v1/prices/{plain['ticker']}", {"fields": "volume,close,nonsense", "limit": 5000}),
        (f"/v1/prices/{split['ticker']}", {"adjust": "split", "limit": 5000}),
        (f"/v1/prices/{split['ticker']}", {"adjust": "split", "start": split["date"]}),
        (
            f"/v1/prices/{split['ticker']},{plain['ticker']}",
            {"adjust": "split", "fields": "close,volume", **window, "limit": 40},
        ),
    ]


@pytest.mark.parametrize("plan", ["redistribution", "free"])
def test_store_answers_exactly_as_the_sql_path(
    api_with_store: RunningApi,
    api_without_store: RunningApi,
    api_tiny_store: RunningApi,
    scenarios: dict[str, Any],
    plan: str,
) -> None:
    servers = [api_with_store, api_without_store, api_tiny_store]
    # an account of its own on each server: the usage headers count the same requests
    keys = [server.new_key(plan).key for server in servers]
    asked = 0
    for path, params in _requests(scenarios):
        if plan == "free" and ("," in path or "," in str(params.get("entity_id", ""))):
            continue  # Free asks one ticker per request
        _same_on_every_server(servers, keys, path, params, status=None)
        asked += 1
    assert asked >= 10
    store = api_with_store.app.state.published.row_store
    assert store.stats.hits > 0 and store.stats.entries > 0
    assert api_tiny_store.app.state.published.row_store.stats.evictions > 0
    assert api_without_store.app.state.published.row_store.stats.loads == 0


def _dated_requests(scenarios: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Insiders and holdings requests the store answers (one company, one security, one
    manager; any window, flags and page size), and some it leaves to DuckDB (several companies,
    a security's positions of one manager, an issuer's securities)."""
    insider, plain = scenarios["insiders"]["ticker"], scenarios["plain"]["ticker"]
    holdings = scenarios["holdings"]
    manager, quarters = holdings["manager_id"], holdings["quarters"]
    amended = scenarios["holdings_amendments"]["restatement"]["report_date"]
    window = {"start": before_as_of(scenarios, 700), "end": before_as_of(scenarios, 30)}
    return [
        (f"/v1/insiders/{insider}", {}),
        (f"/v1/insiders/{insider}", {**window, "limit": 3}),
        (f"/v1/insiders/{insider}", {"end": window["start"], "limit": 4}),
        (f"/v1/insiders/{insider}", {"start": "2999-01-01"}),
        (f"/v1/insiders/{insider}", {"include_amendments": "false", "limit": 5}),
        (f"/v1/insiders/{insider}", {"include_derivatives": "false", **window}),
        (f"/v1/insiders/{insider}", {"include_uncoded": "true", "limit": 6}),
        (f"/v1/insiders/{insider},{plain}", {"limit": 5}),
        (f"/v1/holdings/{holdings['ticker']}", {}),
        (f"/v1/holdings/{holdings['ticker']}", {"limit": 4}),
        (f"/v1/holdings/{holdings['ticker']}", {"quarter": quarters[-1], "limit": 3}),
        (f"/v1/holdings/{holdings['ticker']}", {"quarter": amended, "include_superseded": "true"}),
        (f"/v1/holdings/{holdings['ticker']}", {"quarter": "1999-03-31"}),
        (f"/v1/holdings/{holdings['ticker']}", {"manager_id": str(manager), "limit": 2}),
        (f"/v1/managers/{manager}/holdings", {"limit": 7}),
        (f"/v1/managers/{manager}/holdings", {"quarter": amended, "limit": 5}),
        (f"/v1/managers/{manager}/holdings", {"quarter": amended, "include_superseded": "true"}),
        (f"/v1/managers/{manager}/holdings", {"quarter": quarters[0]}),
    ]


def test_insiders_and_holdings_from_the_store_answer_exactly_as_the_sql_path(
    api_with_store: RunningApi,
    api_without_store: RunningApi,
    api_tiny_store: RunningApi,
    scenarios: dict[str, Any],
) -> None:
    servers = [api_with_store, api_without_store, api_tiny_store]
    keys = [server.new_key("pro").key for server in servers]
    store = api_with_store.app.state.published.row_store
    loads = store.stats.loads
    for path, params in _dated_requests(scenarios):
        _same_on_every_server(servers, keys, path, params)
    # the entity's rows, each shape loaded once: the store answered these
    assert store.stats.loads > loads
    # an id that is no manager's: the same 404 from the version's manager ids as from SQL
    _same_on_every_server(servers, keys, "/v1/managers/1/holdings", {}, status=404)
    # an issuer entity_id (its securities) is asked of DuckDB, and still answers the same
    issuer = scenarios["share_classes"]["issuer_entity_id"]
    first, second = (
        every_page_as_sent(server, key, "/v1/holdings", {"entity_id": str(issuer)})
        for server, key in zip(servers[:2], keys[:2], strict=True)
    )
    assert first == second


def _statement_requests(scenarios: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Fundamentals requests the store answers (one company: any window, period, view, field
    list, page size, and ``as_of`` on each side of a restatement's days), and one it leaves to
    DuckDB (two companies)."""
    restated = scenarios["restatement"]
    path = f"/v1/fundamentals/{restated['ticker']}"
    first, again = (dt.date.fromisoformat(restated[k]) for k in ("first_known", "restated_known"))
    days = [first - dt.timedelta(days=1), first, again - dt.timedelta(days=1), again]
    period = {"start": restated["period_end"], "end": restated["period_end"]}
    asked: list[tuple[str, dict[str, Any]]] = [
        (path, {}),
        (path, {"limit": 5}),
        (path, {"view": "as_reported", "limit": 3}),
        (path, {"period": "quarterly", "start": "2020-01-01", "limit": 4}),
        (path, {"period": "annual", "fields": "revenue,eps_diluted"}),
        (path, {"end": "1990-01-01"}),
        (f"{path},{scenarios['plain']['ticker']}", {"as_of": days[2].isoformat(), "limit": 9}),
    ]
    for day in days:
        asked += [
            (path, {"as_of": day.isoformat(), "limit": 6}),
            (path, {"as_of": day.isoformat(), "view": "as_reported", **period}),
            (path, {"as_of": day.isoformat(), "view": "as_reported", "limit": 2}),
            (path, {"as_of": day.isoformat(), "period": "quarterly", "fields": "net_income"}),
        ]
    return asked


def test_fundamentals_from_the_store_answer_exactly_as_the_sql_path(
    api_with_store: RunningApi,
    api_without_store: RunningApi,
    api_tiny_store: RunningApi,
    scenarios: dict[str, Any],
) -> None:
    servers = [api_with_store, api_without_store, api_tiny_store]
    keys = [server.new_key("pro").key for server in servers]
    store = api_with_store.app.state.published.row_store
    loads = store.stats.loads
    superseded_shown = 0
    for path, params in _statement_requests(scenarios):
        pages = _same_on_every_server(servers, keys, path, params)
        superseded_shown += sum(
            row["superseded_on"] is not None
            for _, _, body in pages
            for row in orjson.loads(body)["data"]
        )
    assert store.stats.loads > loads
    assert superseded_shown > 0  # the requests reached rows whose superseding was known


def test_rows_larger_than_the_budget_are_served_then_asked_of_duckdb(
    published_home: Path, api_without_store: RunningApi, scenarios: dict[str, Any]
) -> None:
    """A store smaller than any entity's rows: the first request of each serves the rows it
    loaded (not kept), the next ones go to DuckDB; every answer the store-off server's."""
    asked = [
        _requests(scenarios)[0],
        _dated_requests(scenarios)[0],
        _dated_requests(scenarios)[8],
        _dated_requests(scenarios)[14],
        _statement_requests(scenarios)[1],
    ]
    with contextlib.contextmanager(_served_with_store)(published_home, 0.0001) as small:
        servers = [small, api_without_store]
        keys = [server.new_key("pro").key for server in servers]
        store = small.app.state.published.row_store
        loads = []
        for round_ in (1, 2):
            for path, params in asked:
                first, second = (
                    every_page_as_sent(server, key, path, {**params, "limit": 5000 - round_})
                    for server, key in zip(servers, keys, strict=True)
                )
                assert first == second and first[0][0] == 200, (path, params)
            loads.append(store.stats.loads)
        assert store.stats.entries == 0
        assert loads[0] >= len(asked) and loads[1] == loads[0]  # the second round: DuckDB's


def _resolve_requests(scenarios: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Resolve on the days around an index addition and removal, a rename and a reused
    ticker, one ticker and several: memberships and links from the store's version entry."""
    events, renamed = scenarios["index_events"], scenarios["renamed"]
    reused, delisted = scenarios["reused"], scenarios["delisted"]
    event_day = dt.date.fromisoformat(events["added"]["date"])
    days = [event_day - dt.timedelta(days=1), event_day, event_day + dt.timedelta(days=1)]
    asked: list[tuple[str, dict[str, Any]]] = [
        (f"/v1/resolve/{renamed['new_ticker']}", {}),
        (f"/v1/resolve/{renamed['old_ticker']}", {"date": renamed["change_date"]}),
        (f"/v1/resolve/{reused['ticker']}", {"date": reused["periods"][0]["valid_from"]}),
        (f"/v1/resolve/{delisted['ticker']}", {"date": delisted["last_date"]}),
        (f"/v1/resolve/{scenarios['plain']['ticker']},{renamed['new_ticker']}", {}),
    ]
    for day in days:
        tickers = f"{events['added']['ticker']},{events['removed']['ticker']}"
        asked.append((f"/v1/resolve/{tickers}", {"date": day.isoformat()}))
    return asked


def test_resolve_from_the_store_answers_exactly_as_the_sql_path(
    api_with_store: RunningApi,
    api_without_store: RunningApi,
    api_tiny_store: RunningApi,
    scenarios: dict[str, Any],
) -> None:
    servers = [api_with_store, api_without_store, api_tiny_store]
    keys = [server.new_key("pro").key for server in servers]
    removals_shown = 0
    for path, params in _resolve_requests(scenarios):
        pages = _same_on_every_server(servers, keys, path, params)
        body = orjson.loads(pages[0][2])["data"]
        removals_shown += sum(
            membership["removed"] is not None
            for item in body.values()
            for entity in item["entities"]
            for membership in entity["index_membership"]
        )
    assert removals_shown > 0  # the days reached a removal that had happened


def _roster_requests(scenarios: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every index's roster, current and as of the days around an addition and a removal,
    before any member, in the future, a renamed member's change; paged in small pages; and
    the index's events (which read the rosters' codes and grains)."""
    events, renamed = scenarios["index_events"], scenarios["renamed"]
    event_day = dt.date.fromisoformat(events["added"]["date"])
    days = [
        event_day - dt.timedelta(days=1),
        event_day,
        event_day + dt.timedelta(days=1),
        dt.date.fromisoformat(renamed["change_date"]) - dt.timedelta(days=1),
        dt.date.fromisoformat(renamed["change_date"]),
        dt.date(1990, 1, 2),
        dt.date.fromisoformat(scenarios["as_of"]) + dt.timedelta(days=400),
    ]
    asked: list[tuple[str, dict[str, Any]]] = []
    for code in ("sp500", "DJIA", "ndx100"):
        asked.append((f"/v1/index/{code}", {}))
        asked.append((f"/v1/index/{code}", {"limit": 7, "offset": 3}))
        asked.append((f"/v1/index/{code}/events", {"limit": 5}))
        asked += [(f"/v1/index/{code}", {"as_of": day.isoformat()}) for day in days]
    asked.append(("/v1/index/sp500", {"as_of": event_day.isoformat(), "limit": 4, "offset": 8}))
    return asked


def test_index_rosters_from_the_store_answer_exactly_as_the_sql_path(
    api_with_store: RunningApi,
    api_without_store: RunningApi,
    api_tiny_store: RunningApi,
    scenarios: dict[str, Any],
) -> None:
    servers = [api_with_store, api_without_store, api_tiny_store]
    keys = [server.new_key("pro").key for server in servers]
    events = scenarios["index_events"]
    in_roster: dict[str, set[str]] = {}
    for path, params in _roster_requests(scenarios):
        pages = _same_on_every_server(servers, keys, path, params)
        body = orjson.loads(pages[0][2])
        if path == "/v1/index/sp500" and set(params) == {"as_of"}:
            in_roster[params["as_of"]] = {row["ticker"] for row in body["data"]}
    _same_on_every_server(servers, keys, "/v1/index/nope", {}, status=400)
    # the requests reached the addition and the removal: the rule was exercised
    day = events["added"]["date"]
    before = (dt.date.fromisoformat(day) - dt.timedelta(days=1)).isoformat()
    assert events["added"]["ticker"] in in_roster[day] - in_roster[before]
    assert events["removed"]["ticker"] in in_roster[before] - in_roster[day]


def test_search_from_the_store_answers_exactly_as_the_sql_path(
    api_with_store: RunningApi,
    api_without_store: RunningApi,
    api_tiny_store: RunningApi,
    scenarios: dict[str, Any],
) -> None:
    """Every kind of match (exact ticker, ticker prefix, name prefix, within a name or a
    ticker, a former ticker, a FIGI, a CIK with and without padding), none, letter cases, SQL's
    wildcard characters, non-ASCII text, no ``q``, paged."""
    servers = [api_with_store, api_without_store, api_tiny_store]
    keys = [server.new_key("pro").key for server in servers]
    first = orjson.loads(_same_on_every_server(servers, keys, "/v1/search", {"limit": 500})[0][2])[
        "data"
    ]
    with_figi = next(row for row in first if row["figi"])
    with_cik = next(row for row in first if row["cik"])
    named = next(row for row in first if row["name"] and len(row["name"]) > 6)
    plain, renamed = scenarios["plain"], scenarios["renamed"]
    asked = [
        plain["ticker"],
        plain["ticker"].lower(),
        plain["ticker"][:1],
        renamed["old_ticker"],
        renamed["new_ticker"][:2],
        named["name"][:3].lower(),
        named["name"][2:6].upper(),
        with_figi["figi"].lower(),
        with_cik["cik"],
        with_cik["cik"].lstrip("0"),
        "0",
        "a",
        "%",
        "_",
        "' or 1=1 --",
        "é",
        "ZZZZZZQ",
        "Inc",
    ]
    kinds: set[int] = set()
    for q in asked:
        for params in ({"q": q}, {"q": q, "limit": 3, "offset": 2}):
            page = _same_on_every_server(servers, keys, "/v1/search", params)[0]
            if len(params) == 1:
                body = orjson.loads(page[2])
                kinds.add(min(1, body["meta"]["total"]) if "total" in body["meta"] else -1)
    _same_on_every_server(servers, keys, "/v1/search", {"offset": 40, "limit": 7})
    assert kinds == {0, 1}  # some asked matched nothing, some matched


def test_metrics_from_the_store_answer_exactly_as_the_sql_path(
    api_with_store: RunningApi,
    api_without_store: RunningApi,
    api_tiny_store: RunningApi,
    scenarios: dict[str, Any],
) -> None:
    """Latest rows and rows as known on a date (before, between and after a restatement, before
    any filing), a window, share classes (their own prices), a company's entity id, several
    companies, a field list, paged."""
    servers = [api_with_store, api_without_store, api_tiny_store]
    keys = [server.new_key("pro").key for server in servers]
    restated, classes = scenarios["restatement"], scenarios["share_classes"]
    first_known = dt.date.fromisoformat(restated["first_known"])
    restated_known = dt.date.fromisoformat(restated["restated_known"])
    days = [
        None,
        first_known - dt.timedelta(days=1),
        first_known,
        restated_known - dt.timedelta(days=1),
        restated_known,
        dt.date(1995, 1, 3),
    ]
    subjects = [
        (f"/v1/metrics/{restated['ticker']}", {}),
        (f"/v1/metrics/{classes['class_tickers'][0]}", {}),
        (f"/v1/metrics/{classes['shared_ticker']}", {}),
        ("/v1/metrics", {"entity_id": classes["issuer_entity_id"]}),
        (f"/v1/metrics/{restated['ticker']},{scenarios['plain']['ticker']}", {"limit": 5}),
    ]
    values_seen: set[Any] = set()
    for path, params in subjects:
        for day in days:
            as_of = {"as_of": day.isoformat()} if day else {}
            for extra in ({}, {"start": "2024-01-01", "end": "2025-06-30"}, {"fields": "eps"}):
                pages = _same_on_every_server(
                    servers, keys, path, {**params, **as_of, **extra}, status=None
                )
                if restated["ticker"] in path and pages[0][0] == 200 and not extra:
                    for row in orjson.loads(pages[0][2])["data"]:
                        if row["period_end"] == restated["period_end"]:
                            values_seen.add((day, row["accession"]))
    # the days reached the first filing and its restatement
    assert len({accession for _, accession in values_seen}) >= 2


def test_a_field_list_or_the_split_adjustment_has_entries_of_its_own(
    api_with_store: RunningApi, scenarios: dict[str, Any]
) -> None:
    """Rows of another shape are another entry (loaded once, then hit); rows of the same
    shape are the same entry whatever the window."""
    key = api_with_store.new_key("pro").key
    ticker = scenarios["split"]["ticker"]
    store = api_with_store.app.state.published.row_store
    # shapes no other test of the session's server asks for: each is loaded here first
    for params in ({"fields": "low,dividend"}, {"adjust": "split", "fields": "high,market_cap"}):
        loads = store.stats.loads
        get(api_with_store, key, f"/v1/prices/{ticker}", **params)
        assert store.stats.loads == loads + 1, params
        hits = store.stats.hits
        response = get(api_with_store, key, f"/v1/prices/{ticker}", **params, start="2000-01-01")
        assert response.status_code == 200
        assert (store.stats.loads, store.stats.hits) == (loads + 1, hits + 1), params


def test_aggregated_rows_are_answered_by_sql(
    api_without_store: RunningApi, api_with_store: RunningApi, scenarios: dict[str, Any]
) -> None:
    """An interval's buckets depend on the window (the first and last hold only its days):
    those go to DuckDB (and still equal the store-off server's answers)."""
    keys = [server.new_key("pro").key for server in (api_with_store, api_without_store)]
    ticker = scenarios["split"]["ticker"]
    loads_before = api_with_store.app.state.published.row_store.stats.loads
    hits_before = api_with_store.app.state.published.row_store.stats.hits
    window = {"start": before_as_of(scenarios, 200), "end": before_as_of(scenarios, 20)}
    for params in ({"interval": "1w"}, {"interval": "1mo", **window}, {"interval": "3d"}):
        first, second = (
            every_page_as_sent(server, key, f"/v1/prices/{ticker}", params)
            for server, key in zip((api_with_store, api_without_store), keys, strict=True)
        )
        assert first == second and first[0][0] == 200
    stats = api_with_store.app.state.published.row_store.stats
    assert (stats.loads, stats.hits) == (loads_before, hits_before)


def _rows(entity: int, days: int) -> list[dict[str, Any]]:
    first = dt.date(2026, 1, 1)
    return [
        {"entity_id": entity, "date": first + dt.timedelta(days=n), "close": n + 0.5}
        for n in range(days)
    ]


def test_entity_rows_window_is_inclusive_at_both_ends() -> None:
    held = EntityRows.of(_rows(1, 10))
    dates = [orjson.loads(orjson.dumps(row))["date"] for row in held.rows]
    assert dates[0] == "2026-01-01" and len(dates) == 10
    assert len(held.between(dt.date(2026, 1, 3), dt.date(2026, 1, 5))) == 3
    assert len(held.between(None, dt.date(2026, 1, 1))) == 1
    assert held.between(dt.date(2026, 2, 1), None) == []
    assert held.between(dt.date(2026, 1, 5), dt.date(2026, 1, 4)) == []
    as_text = orjson.dumps(held.between(None, None))
    assert orjson.loads(as_text) == orjson.loads(orjson.dumps(_rows(1, 10)))


def test_newest_first_rows_window_the_same_way() -> None:
    oldest_first = _rows(1, 10)
    held = EntityRows.of(reversed(oldest_first), newest_first=True)
    window = held.between(dt.date(2026, 1, 3), dt.date(2026, 1, 5))
    assert [orjson.loads(orjson.dumps(row))["date"] for row in window] == [
        "2026-01-05",
        "2026-01-04",
        "2026-01-03",
    ]
    assert held.between(None, dt.date(2026, 1, 1)) == held.rows[-1:]
    assert held.between(dt.date(2026, 1, 10), None) == held.rows[:1]
    assert held.between(dt.date(2026, 1, 5), dt.date(2026, 1, 4)) == []
    assert held.entities_at(held.window(None, None)) == {1}
    # one manager's positions, say: rows of several securities
    mixed = EntityRows.of([*_rows(1, 2), {"entity_id": 2, "date": dt.date(2026, 1, 3)}])
    assert mixed.entities_at(range(1, 3)) == {1, 2} and mixed.entities_at(range(0, 2)) == {1}


def test_store_keeps_within_its_budget_least_recently_used_out() -> None:
    one = EntityRows.of(_rows(1, 50)).size
    store = RowStore(budget_bytes=one * 3)
    loads = itertools.count()

    def load(entity: int) -> Any:
        next(loads)
        return lambda: EntityRows.of(_rows(entity, 50))

    for entity in (1, 2, 3):
        store.entity_rows(("v1", "prices", entity, "all"), load(entity))
    store.entity_rows(("v1", "prices", 1, "all"), load(1))  # a hit: 1 is now the most recent
    store.entity_rows(("v1", "prices", 4, "all"), load(4))  # evicts 2, the least recently used
    assert store.stats.bytes <= store.budget_bytes
    assert (store.stats.loads, store.stats.hits, store.stats.evictions) == (4, 1, 1)
    store.entity_rows(("v1", "prices", 1, "all"), load(1))
    store.entity_rows(("v1", "prices", 2, "all"), load(2))
    assert store.stats.loads == 5  # 1 was kept, 2 had to be loaded again
    store.entity_rows(("v2", "prices", 1, "all"), load(1))
    store.drop_version("v1")
    assert store.stats.entries == 1 and store.stats.bytes == one
    big = RowStore(budget_bytes=one // 2)
    assert not big.too_large(("v1", "prices", 1, "all"))
    assert len(big.entity_rows(("v1", "prices", 1, "all"), load(1)).rows) == 50
    assert big.stats.entries == 0  # larger than the budget: served, not kept
    assert big.too_large(("v1", "prices", 1, "all"))  # and remembered, until its version goes
    big.drop_version("v1")
    assert not big.too_large(("v1", "prices", 1, "all"))


def test_an_entry_holds_about_the_bytes_it_counts() -> None:
    """The budget counts an entry's ``size``; the memory the entry holds (measured by
    tracemalloc, the rows' own allocations) stays within a fifth of it, whatever buffer the
    JSON encoder wrote each row into (orjson's hold kilobytes for a row of a few hundred
    bytes: a worker budgeted 256 MB grew by 3 GB)."""
    rows = [
        {**row, "entity_name": "Nordic Semiconductor Holdings Inc", "note": "x" * 300}
        for row in _rows(1, 2000)
    ]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        held = EntityRows.of(rows)
        taken = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held.size * 0.8 <= taken <= held.size * 1.2, (taken, held.size)
