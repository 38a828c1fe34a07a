"""Benchmark: every request shape of issue 45, ``findata serve`` against a bare floor, side by
side, on both control planes, in one run.

    .venv/bin/python benchmarks/api_shapes.py --home H --seconds 5 --rounds 3
    .venv/bin/python benchmarks/api_shapes.py --home H --shapes prices,search \
        --control-planes sqlite
    .venv/bin/python benchmarks/api_shapes.py --list --home H

Uses the home's published version (runs ``findata demo --no-serve`` first when there is none).
Starts, each pinned to core 0 (``taskset -c 0``), one uvicorn worker each:

- the floor, ``benchmarks/floor_server.py``: the version's tables copied into native DuckDB
  tables in memory, sorted by their natural keys; per shape the SQL findata runs for that
  request, no key, no quota, no cache, ``{"data": [...], "meta": {...}}``; started once, used
  on both control planes;
- per control plane, ``findata serve --workers 1``: the embedded default (SQLite, quota counters
  in memory), then PostgreSQL with the response cache and counters in Redis: a database made on
  ``--postgres`` for the run and dropped after it (or ``--database-url``, kept), and the Redis
  database of ``--cache-url`` (``redis://127.0.0.1:6379/7`` by default), FLUSHED before and after
  the run: an answer cached by an earlier run would be a cache hit here. Each run of findata asks
  with a key of a new Redistribution account, so that no run meets the quotas an earlier one used
  (50,000,000 rows an hour is a minute of ten-ticker requests at 300 a second); every 429 and
  every other refused answer (an MCP call refused is an HTTP 200 with ``isError``) is reported
  loudly, as is an answer from the response cache (``Age``) where none was meant.

The Free plan's history floor (``prices-free``) cannot be measured with quotas on: a Free
account may make 40 requests an hour, and no other plan has a history floor. It is measured with
a Free key on a second ``findata serve`` with ``FINDATA_QUOTAS_ENABLED=false`` (the history
floor still applies; nothing is counted), and its row says so.

wrk runs on core 1 with a Lua script per shape that makes request number n from lists of values
(mixed radix: the subject varies fastest, then windows, dates, limits), so that every request of
a run is new to findata's response cache; its REST and MCP requests share one count per shape
and control plane (an MCP call with ``limit`` shares the REST cache entry of the same request).
Modes, per shape: ``floor``, ``findata`` (REST, a new URL every request), ``cached`` (REST, the
same URL every request) and ``mcp`` (``tools/call`` POSTs to ``/mcp``, the same arguments, with
``limit`` so that no result budget cuts them).

Before measuring, ``--samples`` requests of every shape are asked of both servers: the floor's
``data`` must equal findata's byte for byte once re-serialised, and findata's MCP result's
``data`` the floor's for another request; otherwise the run stops naming the shape (the rows
column of the table is of these answers). Then
``--rounds`` rounds, each every shape in turn (floor, findata, cached, MCP) for ``--seconds``,
after an unrecorded ``--warmup`` of each. The table per control plane gives the medians of the
rounds: requests/s and p99 of the floor and findata, their ratios, cache hits over the floor's
uncached requests/s, MCP over REST, each ratio marked against issue 45's targets (findata at
least 1.5× the floor's requests/s, p99 at most 1.5× the floor's, cache hits at least 5×, MCP at
least 0.9× REST). Every process started here is stopped at the end, on Ctrl-C too.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import math
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import orjson
import psycopg
import redis
from api_floor import Urls
from served_homes import FINDATA, findata_env, free_port, prepare_home
from wrk_runs import (
    LUA_DONE,
    RESULT_MARK,
    Run,
    Server,
    ensure_wrk,
    pinned,
    run_wrk,
    servers_stopped_at_exit,
    start_server,
)

from findata.accounts.store import AccountStore
from findata.clock import get_clock
from findata.control_plane.database import engine_for
from findata.dates import years_before
from findata.published.versions import open_version
from findata.settings import Settings

FLOOR_SERVER = Path(__file__).with_name("floor_server.py")
#: the MCP revision asked for: one that gets structured results (api/mcp/results.py)
MCP_PROTOCOL = "2025-11-25"
PRICE_FIELDS = ["open", "high", "low", "close", "adj_close", "volume"]
#: the targets of issue 45
TARGETS = {"rate": 1.5, "p99": 1.5, "cached": 5.0, "mcp": 0.9}
MODES = ("floor", "findata", "cached", "mcp")

LUA = (
    r"""
-- api_shapes.py, shape %(name)s: request number n made from lists of values (a new request
-- every time but in mode "cached")
local sizes = {%(sizes)s}
local space = %(space)d
local values = {floor = {%(floor_values)s}, findata = {%(findata_values)s},
  mcp = {%(mcp_values)s}}
local parts = {floor = {%(floor_parts)s}, findata = {%(findata_parts)s},
  mcp = {%(mcp_parts)s}}
local slots = {floor = {%(floor_slots)s}, findata = {%(findata_slots)s},
  mcp = {%(mcp_slots)s}}
local threads = {}

function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

function init(args)
  mode, base, nthreads, key = args[1], tonumber(args[2]), tonumber(args[3]), args[4]
  sent, non2xx, hits, statuses = 0, 0, 0, {}
  kind = "findata"
  if mode == "floor" or mode == "mcp" then kind = mode end
  headers = {}
  if key ~= "" then headers["X-API-Key"] = key end
  if mode == "mcp" then
    headers["Content-Type"] = "application/json"
    headers["Accept"] = "application/json, text/event-stream"
    headers["MCP-Protocol-Version"] = "%(protocol)s"
  end
end

-- request number n (api_shapes.py's RequestShape.request does the same)
local function expand(n)
  n = n %% space
  local digit = {}
  for i = 1, #sizes do
    digit[i] = n %% sizes[i]
    n = math.floor(n / sizes[i])
  end
  local p, s, v = parts[kind], slots[kind], values[kind]
  local out = {p[1]}
  for j = 1, #s do
    out[#out + 1] = v[s[j]][digit[s[j]] + 1]
    out[#out + 1] = p[j + 1]
  end
  return table.concat(out)
end

function request()
  local n = base + tid + nthreads * sent
  sent = sent + 1
  if mode == "cached" then n = base end
  if mode == "mcp" then return wrk.format("POST", "/mcp", headers, expand(n)) end
  return wrk.format("GET", expand(n), headers)
end

function response(status, response_headers, body)
  local failed = nil
  if status < 200 or status > 299 then
    failed = tostring(status)
  elseif mode == "mcp" and (string.find(body, '"isError":true', 1, true) or
      string.find(body, '"error":{"code"', 1, true)) then
    -- a refused tool call is an HTTP 200: its REST status is in the error body
    failed = "mcp " .. (string.match(body, '\\"status\\":(%%d+)') or "error")
  end
  if failed then
    non2xx = non2xx + 1
    statuses[failed] = (statuses[failed] or 0) + 1
  end
  if response_headers["age"] or response_headers["Age"] then hits = hits + 1 end
end

"""
    + LUA_DONE
)


def _text(value: Any) -> str:
    return value.isoformat() if isinstance(value, dt.date) else str(value)


@dataclass(frozen=True)
class Slot:
    """One varying part of a shape's requests: its values as findata's URL, the floor's URL and
    the MCP arguments (JSON) write them, position for position."""

    findata: tuple[str, ...]
    floor: tuple[str, ...]
    mcp: tuple[str, ...]

    def __post_init__(self) -> None:
        if not len(self.findata) == len(self.floor) == len(self.mcp):
            raise ValueError("a slot's three lists must be as long as each other")

    def __len__(self) -> int:
        return len(self.findata)

    @classmethod
    def of(
        cls,
        values: Sequence[Any] | Iterator[Any],
        findata: Callable[[Any], str] = _text,
        floor: Callable[[Any], str] | None = None,
        mcp: Callable[[Any], Any] | None = None,
    ) -> Slot:
        """A slot of ``values``: in URLs as text (``findata`` writes findata's, ``floor`` the
        floor's, findata's by default), in the MCP arguments as JSON (of ``mcp(value)``, else
        findata's text)."""
        values = list(values)
        return cls(
            findata=tuple(quote(findata(value), safe=",-") for value in values),
            floor=tuple(quote((floor or findata)(value), safe=",-/") for value in values),
            mcp=tuple(json.dumps(mcp(value) if mcp else findata(value)) for value in values),
        )


@dataclass(frozen=True)
class RequestShape:
    """One request shape: the URL findata is asked (``<slot>`` marks where a slot's value
    goes), the floor's URL for the same rows, the MCP tool and its arguments (JSON), and the
    slots; request number n takes its values from the slots in mixed radix, the first slot
    varying fastest."""

    name: str
    label: str
    findata: str
    floor: str
    tool: str
    arguments: str
    slots: dict[str, Slot]
    plan: str = "redistribution"
    #: False: measured on a findata server with FINDATA_QUOTAS_ENABLED=false (see the docstring)
    quotas: bool = True
    #: the history floor findata must apply (its X-Data-Floor header), if any
    history_floor: dt.date | None = None

    @property
    def space(self) -> int:
        """How many different requests the shape has."""
        return math.prod(len(slot) for slot in self.slots.values())

    def template(self, kind: str) -> str:
        """The text request number n is made from: a path, or the JSON-RPC body of a call."""
        if kind == "mcp":
            return (
                f'{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{self.tool}",'
                f'"arguments":{self.arguments}}}}}'
            )
        return self.findata if kind == "findata" else self.floor

    def pieces(self, kind: str) -> tuple[list[str], list[int]]:
        """The template's literal parts and, between them, the (0-based) slot of each gap."""
        names = list(self.slots)
        split = re.split(r"<(\w+)>", self.template(kind))
        return split[0::2], [names.index(name) for name in split[1::2]]

    def request(self, kind: str, n: int) -> str:
        """Request number ``n`` as ``kind`` (``floor``, ``findata``, ``mcp``) sends it (the Lua
        script's ``expand``)."""
        n %= self.space
        digits = []
        for slot in self.slots.values():
            digits.append(n % len(slot))
            n //= len(slot)
        parts, gaps = self.pieces(kind)
        slots = list(self.slots.values())
        out = [parts[0]]
        for j, index in enumerate(gaps):
            out += [getattr(slots[index], kind)[digits[index]], parts[j + 1]]
        return "".join(out)

    def lua(self) -> str:
        """The wrk script of the shape."""
        lists: dict[str, str] = {}
        for kind in ("floor", "findata", "mcp"):
            parts, gaps = self.pieces(kind)
            lists[f"{kind}_values"] = ", ".join(
                "{" + ", ".join(_lua_string(v) for v in getattr(slot, kind)) + "}"
                for slot in self.slots.values()
            )
            lists[f"{kind}_parts"] = ", ".join(_lua_string(part) for part in parts)
            lists[f"{kind}_slots"] = ", ".join(str(index + 1) for index in gaps)
        return LUA % {
            "name": self.name,
            "sizes": ", ".join(str(len(slot)) for slot in self.slots.values()),
            "space": self.space,
            "protocol": MCP_PROTOCOL,
            "mark": RESULT_MARK,
            **lists,
        }


def _lua_string(text: str) -> str:
    """``text`` as a Lua string literal (printable ASCII only: nothing here needs more)."""
    if not all(" " <= c <= "~" for c in text):
        raise ValueError(f"not printable ASCII: {text!r}")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class Listed:
    """A ticker that names one security, and nothing else, through the version's history (so
    it resolves to that security, or its issuer, on every date), of an issuer with that one
    security (so a company-grain endpoint serves the issuer, not a share class)."""

    ticker: str
    security: int
    issuer: int
    valid_from: dt.date
    valid_to: dt.date | None


LISTED_SQL = """
    SELECT h.ticker, h.entity_id, h.issuer_entity_id, h.valid_from, h.valid_to
    FROM ticker_history AS h
    WHERE h.entity_grain = 'security' AND h.ticker_kind = 'own'
      AND h.ticker IN (SELECT ticker FROM ticker_history GROUP BY ticker HAVING count(*) = 1)
      AND h.issuer_entity_id IN (
          SELECT issuer_entity_id FROM entities WHERE entity_grain = 'security'
          GROUP BY issuer_entity_id HAVING count(*) = 1)
    ORDER BY h.entity_id
"""


def _column(connection: Any, sql: str) -> list[Any]:
    return [row[0] for row in connection.execute(sql).fetchall()]


def build_shapes(database: Path, as_of: dt.date, today: dt.date) -> list[RequestShape]:
    """Every shape of issue 45, its values read from the published version ``database``;
    ``as_of`` is the last date of its prices, ``today`` the servers' UTC date."""
    with open_version(database) as connection:
        listed = [Listed(*row) for row in connection.execute(LISTED_SQL).fetchall()]
        priced = _column(connection, "SELECT DISTINCT entity_id FROM prices ORDER BY 1")
        insider_issuers = set(
            _column(connection, "SELECT DISTINCT entity_id FROM insider_transactions")
        )
        held = set(
            _column(
                connection, "SELECT DISTINCT entity_id FROM institutional_holdings WHERE is_current"
            )
        )
        managers = _column(connection, "SELECT manager_id FROM managers ORDER BY 1")
        quarters = _column(
            connection, "SELECT DISTINCT report_date FROM institutional_holdings ORDER BY 1"
        )
        codes = _column(connection, "SELECT DISTINCT index_code FROM index_membership ORDER BY 1")
        names = _column(connection, "SELECT DISTINCT name FROM entities ORDER BY 1")
    trading = [s for s in listed if s.valid_to is None]  # listed today: rows in the last year
    windows = Urls.of(priced, as_of)
    starts, ends = Slot.of(windows.starts), Slot.of(windows.year_ends)
    last_days = [as_of - dt.timedelta(days=k) for k in range(3 * 365)]

    def tickers(subjects: list[Listed], floor: Callable[[Listed], str]) -> Slot:
        return Slot.of(subjects, findata=lambda s: s.ticker, floor=floor)

    def security(s: Listed) -> str:
        return str(s.security)

    def issuer(s: Listed) -> str:
        return str(s.issuer)

    year = "start=<start>&end=<end>"
    year_args = '"start": <start>, "end": <end>'

    def prices(name: str, label: str, query: str = "", arguments: str = "") -> RequestShape:
        return RequestShape(
            name,
            label,
            f"/v1/prices/<ticker>?{year}&limit=5000{query}",
            f"/v1/prices?entity_id=<ticker>&{year}&limit=5000{query}",
            "get_prices",
            f'{{"ticker": <ticker>, {year_args}, "limit": 5000{arguments}}}',
            {"ticker": tickers(trading, security), "start": starts, "end": ends},
        )

    groups = [[trading[(i + k) % len(trading)] for k in range(10)] for i in range(len(trading))]
    if len(trading) < 10:
        groups = []  # fewer than ten tickers to ask for: the shape is left out
    floor_date = years_before(today, 1)
    holders = [s for s in listed if s.security in held]
    insiders = [s for s in listed if s.issuer in insider_issuers]
    # dates from which most tickers resolve (none before its first day: resolve's 404)
    resolvable_from = max(
        min((s.valid_from for s in listed), default=as_of), as_of - dt.timedelta(days=3 * 365)
    )
    resolvable = [s for s in listed if s.valid_from <= resolvable_from]
    resolve_days = [
        resolvable_from + dt.timedelta(days=k) for k in range((as_of - resolvable_from).days + 1)
    ]
    queries = sorted({s.ticker for s in listed} | {n.split()[0][:4] for n in names if n.strip()})
    shapes = [
        prices("prices", "prices: one ticker, last year, every field"),
        prices(
            "prices-fields",
            f"prices: the same, fields={','.join(PRICE_FIELDS)}",
            f"&fields={','.join(PRICE_FIELDS)}",
            f', "fields": {json.dumps(PRICE_FIELDS)}',
        ),
        prices(
            "prices-split", "prices: the same, adjust=split", "&adjust=split", ', "adjust": "split"'
        ),
        prices("prices-1w", "prices: the same, interval=1w", "&interval=1w", ', "interval": "1w"'),
        prices(
            "prices-1mo", "prices: the same, interval=1mo", "&interval=1mo", ', "interval": "1mo"'
        ),
        RequestShape(
            "prices-10",
            "prices: ten tickers in one request, last year",
            f"/v1/prices/<tickers>?{year}&limit=5000",
            f"/v1/prices?entity_id=<tickers>&{year}&limit=5000",
            "get_prices",
            f'{{"ticker": <tickers>, {year_args}, "limit": 5000}}',
            {
                "tickers": Slot.of(
                    groups,
                    findata=lambda group: ",".join(s.ticker for s in group),
                    floor=lambda group: ",".join(str(s.security) for s in group),
                ),
                "start": starts,
                "end": ends,
            },
        ),
        RequestShape(
            "prices-entity",
            "prices: entity_id=, last year",
            f"/v1/prices?entity_id=<id>&{year}&limit=5000",
            f"/v1/prices?entity_id=<id>&{year}&limit=5000",
            "get_prices",
            f'{{"entity_id": <id>, {year_args}, "limit": 5000}}',
            {"id": Slot.of(priced, mcp=lambda i: [i]), "start": starts, "end": ends},
        ),
        RequestShape(
            "prices-free",
            f"prices: one ticker, Free plan's floor ({floor_date}), QUOTAS OFF",
            "/v1/prices/<ticker>?end=<end>&limit=<limit>",
            f"/v1/prices?entity_id=<ticker>&start={floor_date}&end=<end>&limit=<limit>",
            "get_prices",
            '{"ticker": <ticker>, "end": <end>, "limit": <limit>}',
            {
                "ticker": tickers(trading, security),
                "end": ends,
                "limit": Slot.of(range(4000, 5001), mcp=int),
            },
            plan="free",
            quotas=False,
            history_floor=floor_date,
        ),
        RequestShape(
            "fundamentals",
            "fundamentals: one ticker, period=quarterly, as_of",
            "/v1/fundamentals/<ticker>?period=quarterly&as_of=<as_of>&limit=1000",
            "/v1/fundamentals?entity_id=<ticker>&period=quarterly&as_of=<as_of>&limit=1000",
            "get_fundamentals",
            '{"ticker": <ticker>, "period": "quarterly", "as_of": <as_of>, "limit": 1000}',
            {"ticker": tickers(listed, issuer), "as_of": Slot.of(last_days)},
        ),
        RequestShape(
            "metrics",
            "metrics: one ticker, as_of",
            "/v1/metrics/<ticker>?as_of=<as_of>&limit=100",
            "/v1/metrics?entity_id=<ticker>&as_of=<as_of>&limit=100",
            "get_metrics",
            '{"ticker": <ticker>, "as_of": <as_of>, "limit": 100}',
            {"ticker": tickers(listed, issuer), "as_of": Slot.of(last_days)},
        ),
        RequestShape(
            "insiders",
            "insiders: one ticker, last year",
            f"/v1/insiders/<ticker>?{year}&limit=<limit>",
            f"/v1/insiders?entity_id=<ticker>&{year}&limit=<limit>",
            "get_insiders",
            f'{{"ticker": <ticker>, {year_args}, "limit": <limit>}}',
            {
                "ticker": tickers(insiders, issuer),
                "start": starts,
                "end": ends,
                "limit": Slot.of(range(4000, 5001), mcp=int),
            },
        ),
        RequestShape(
            "holdings",
            "holdings: one ticker, every quarter",
            "/v1/holdings/<ticker>?limit=<limit>",
            "/v1/holdings?entity_id=<ticker>&limit=<limit>",
            "get_holdings",
            '{"ticker": <ticker>, "limit": <limit>}',
            {
                "ticker": tickers(holders, security),
                "limit": Slot.of(range(1000, 5001), mcp=int),
            },
        ),
        RequestShape(
            "manager-holdings",
            "manager holdings: one manager, one quarter",
            "/v1/managers/<manager>/holdings?quarter=<quarter>&limit=<limit>",
            "/v1/managers/<manager>/holdings?quarter=<quarter>&limit=<limit>",
            "get_manager_holdings",
            '{"manager_id": <manager>, "quarter": <quarter>, "limit": <limit>}',
            {
                "manager": Slot.of(managers, mcp=int),
                "quarter": Slot.of(quarters),
                "limit": Slot.of(range(1000, 5001), mcp=int),
            },
        ),
        RequestShape(
            "index",
            "index roster: as_of",
            "/v1/index/<code>?as_of=<as_of>&limit=<limit>",
            "/v1/index/<code>?as_of=<as_of>&limit=<limit>",
            "get_index",
            '{"index_name": <code>, "as_of": <as_of>, "limit": <limit>}',
            {
                "code": Slot.of(codes),
                "as_of": Slot.of(last_days),
                "limit": Slot.of(range(100, 1001), mcp=int),
            },
        ),
        RequestShape(
            "resolve",
            "resolve: one ticker, date",
            "/v1/resolve/<ticker>?date=<date>",
            "/v1/resolve/<ticker>?date=<date>",
            "get_resolve",
            '{"ticker": <ticker>, "date": <date>}',
            {
                "ticker": tickers(resolvable, lambda s: f"{s.ticker}/{s.security}"),
                "date": Slot.of(resolve_days),
            },
        ),
        RequestShape(
            "search",
            "search: q (a ticker or a name's first letters)",
            "/v1/search?q=<q>&limit=<limit>",
            "/v1/search?q=<q>&limit=<limit>",
            "get_search",
            '{"q": <q>, "limit": <limit>}',
            {"q": Slot.of(queries), "limit": Slot.of(range(50, 501), mcp=int)},
        ),
    ]
    return shapes


def select_shapes(shapes: list[RequestShape], asked: str | None) -> list[RequestShape]:
    """The shapes named in ``asked`` (comma separated, in the table's order), else every one;
    a shape with no subjects in this version is left out with a word on stderr."""
    known = {shape.name: shape for shape in shapes}
    names = [name.strip() for name in asked.split(",")] if asked else list(known)
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SystemExit(f"unknown shapes: {', '.join(unknown)} (--list names them)")
    chosen = []
    for shape in shapes:
        if shape.name not in names:
            continue
        if shape.space == 0:
            print(f"left out: {shape.name}: this version has nothing to ask it", file=sys.stderr)
            continue
        chosen.append(shape)
    return chosen


class Keys:
    """New accounts and their keys on one control plane: every run of findata asks with a key
    of its own account, so that no run meets the quotas an earlier run used."""

    def __init__(self, control_plane_url: str) -> None:
        self.store = AccountStore(engine_for(control_plane_url), get_clock())
        self.stamp = f"{int(time.time())}-{os.getpid()}"
        self.count = itertools.count()

    def new(self, plan: str) -> str:
        """A key of a new account on ``plan``."""
        email = f"shapes-{self.stamp}-{next(self.count)}@example.com"
        return self.store.create_key(self.store.create_account(email, plan).id).key

    def close(self) -> None:
        """Let go of the control plane's connections."""
        self.store.engine.dispose()


@dataclass(frozen=True)
class ControlPlane:
    """Where findata keeps keys, usage and counters (and its response cache) in one part of the
    run."""

    name: str
    label: str
    database_url: str | None = None
    cache_url: str | None = None


@contextmanager
def control_planes(args: argparse.Namespace) -> Iterator[list[ControlPlane]]:
    """The control planes of ``--control-planes``: PostgreSQL on a database made for the run
    (dropped at the end) unless ``--database-url``; Redis database of ``--cache-url`` flushed
    before and after."""
    planes: list[ControlPlane] = []
    made: str | None = None
    cache: Any = None
    try:
        for name in args.control_planes:
            if name == "sqlite":
                label = "embedded default: SQLite control plane, quota counters in memory"
                planes.append(ControlPlane(name, label))
                continue
            database_url = args.database_url
            if database_url is None:
                made = f"findata_shapes_{os.getpid()}"
                _postgres_admin(args.postgres, f'CREATE DATABASE "{made}"')
                database_url = (
                    args.postgres.rstrip("/").replace("postgresql://", "postgresql+psycopg://", 1)
                    + f"/{made}"
                )
            cache = redis.Redis.from_url(args.cache_url)
            cache.flushdb()  # an answer cached by an earlier run would be a cache hit here
            label = "PostgreSQL control plane, response cache and quota counters in Redis"
            planes.append(ControlPlane(name, label, database_url, args.cache_url))
        yield planes
    finally:
        if cache is not None:
            cache.flushdb()
            cache.close()
        if made is not None:
            _postgres_admin(args.postgres, f'DROP DATABASE IF EXISTS "{made}" WITH (FORCE)')


def _postgres_admin(server: str, statement: str) -> None:
    with psycopg.connect(server.rstrip("/") + "/postgres", autocommit=True) as connection:
        connection.execute(statement)


def mcp_call(client: httpx.Client, server: Server, key: str, body: str) -> Any:
    """The ``data`` of one ``tools/call`` (a refused call stops the run)."""
    headers = {
        "X-API-Key": key,
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MCP_PROTOCOL,
    }
    response = client.post(server.url + "/mcp", content=body, headers=headers)
    # an answer is one server-sent event whose data line is the JSON-RPC response (or, for a
    # refused key, plain JSON)
    lines = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
    message = orjson.loads(lines[0] if lines else response.content)
    result = message.get("result") or {}
    if response.status_code != 200 or result.get("isError") or "structuredContent" not in result:
        raise SystemExit(f"MCP call {body}: {response.status_code} {response.text[:500]}")
    return result["structuredContent"]["data"]


def _rows_of(data: Any) -> int:
    """Rows of an answer's ``data`` (resolve's: the entities of every ticker)."""
    if isinstance(data, dict):
        return sum(len(item["entities"]) for item in data.values())
    return len(data)


def _differ(name: str, expected: Any, got: Any, what: str) -> SystemExit:
    """The stop of a failed honesty check, naming the first row that differs."""
    rows_a = expected if isinstance(expected, list) else [expected]
    rows_b = got if isinstance(got, list) else [got]
    first = next(
        (
            f"findata {a}\n{what:7s} {b}"
            for a, b in zip(rows_a, rows_b, strict=False)
            if orjson.dumps(a) != orjson.dumps(b)
        ),
        "(a prefix of the other)",
    )
    return SystemExit(
        f"honesty check failed on {name}: {what} answers {_rows_of(got)} rows, findata "
        f"{_rows_of(expected)}; first differing row:\n{first}"
    )


def check_shape(
    shape: RequestShape, floor: Server, findata: Server, key: str, samples: int, mcp: bool
) -> list[int]:
    """Ask ``samples`` requests of the shape (numbers far from those wrk asks) of both servers:
    the floor's ``data`` must be findata's byte for byte once re-serialised, and findata's MCP
    result for the next number the floor's. Returns rows per answer."""
    rows: list[int] = []
    step = max(1, shape.space // (samples * 7 + 1)) | 1  # odd: walks every slot
    with httpx.Client(timeout=60) as client:
        for i in range(samples):
            n = shape.space - 1 - i * step
            path = shape.request("findata", n)
            ours = client.get(findata.url + path, headers={"X-API-Key": key})
            theirs = client.get(floor.url + shape.request("floor", n))
            if ours.status_code != 200 or theirs.status_code != 200:
                raise SystemExit(
                    f"honesty check: {shape.name} {path}: findata {ours.status_code} "
                    f"{ours.text[:300]}; floor {theirs.status_code} {theirs.text[:300]}"
                )
            expected, got = orjson.loads(ours.content)["data"], orjson.loads(theirs.content)["data"]
            if orjson.dumps(expected) != orjson.dumps(got):
                raise _differ(f"{shape.name} {path}", expected, got, "floor")
            if shape.history_floor is not None:
                applied = ours.headers.get("X-Data-Floor")
                if applied != shape.history_floor.isoformat():
                    raise SystemExit(
                        f"honesty check: {shape.name} {path}: findata's X-Data-Floor is "
                        f"{applied}, the floor starts at {shape.history_floor}"
                    )
            rows.append(_rows_of(expected))
            if mcp:
                body = shape.request("mcp", n - 1)  # not n: that answer is in the cache now
                called = mcp_call(client, findata, key, body)
                theirs = client.get(floor.url + shape.request("floor", n - 1))
                got = orjson.loads(theirs.content)["data"]
                if orjson.dumps(called) != orjson.dumps(got):
                    raise _differ(f"{shape.name} MCP {body}", called, got, "floor")
    return rows


Results = dict[tuple[str, str], list[Run]]  # (shape, mode): one run per round


def _median(runs: list[Run], attribute: str) -> float:
    return statistics.median(getattr(run, attribute) for run in runs)


@dataclass
class PlaneRun:
    """One control plane's part of the run: its servers, keys, counts and figures."""

    plane: ControlPlane
    servers: dict[bool, Server]  # by ``quotas``: the server a shape is measured on
    keys: Keys
    results: Results = field(default_factory=dict)
    rows: dict[str, list[int]] = field(default_factory=dict)
    #: the next request number of each shape: findata's (REST and MCP), the floor's
    bases: dict[tuple[str, str], int] = field(default_factory=dict)


def measure(
    args: argparse.Namespace,
    wrk: str,
    scripts: dict[str, Path],
    shapes: list[RequestShape],
    floor: Server,
    part: PlaneRun,
) -> None:
    """A warm-up of each shape and mode, then the rounds, every shape in turn in each; one line
    per run."""
    modes = [
        mode
        for mode in MODES
        if not (mode == "cached" and not args.cached) and not (mode == "mcp" and not args.mcp)
    ]

    def run(shape: RequestShape, mode: str, warmup: bool) -> Run:
        server = floor if mode == "floor" else part.servers[shape.quotas]
        key = "" if mode == "floor" else part.keys.new(shape.plan)
        counted = ("floor" if mode == "floor" else "findata", shape.name)
        base = 0 if mode == "cached" else part.bases.get(counted, 0)
        figures = run_wrk(wrk, scripts[shape.name], server, mode, base, key, args, warmup=warmup)
        if mode != "cached":
            part.bases[counted] = figures.next_base
        return figures

    if args.warmup > 0:
        for shape in shapes:
            for mode in modes:
                if mode != "cached":
                    run(shape, mode, warmup=True)
    for round_number in range(1, args.rounds + 1):
        for shape in shapes:
            for mode in modes:
                figures = run(shape, mode, warmup=False)
                part.results.setdefault((shape.name, mode), []).append(figures)
                print(
                    f"{part.plane.name} round {round_number} {shape.name:17s} {mode:7s} "
                    f"{figures.per_second:8.1f} req/s  p50 {figures.p50_ms:7.1f} ms  "
                    f"p99 {figures.p99_ms:7.1f} ms  non-2xx {figures.non2xx}  "
                    f"cache hits {figures.cache_hits}"
                    + (f"  statuses {figures.statuses}" if figures.statuses else "")
                    + (f"  socket errors {figures.socket_errors}" if figures.socket_errors else ""),
                    flush=True,
                )
    for shape in shapes:
        if part.bases.get(("findata", shape.name), 0) > shape.space:
            print(
                f"warning: {part.plane.name} {shape.name}: more requests than the shape's "
                f"{shape.space:,} requests: some were asked twice (see cache hits)",
                file=sys.stderr,
            )


def _mark(figure: float, reference: float, target: str) -> str:
    """``figure`` over ``reference``, and whether it meets issue 45's target for that ratio
    (a dash where nothing was measured)."""
    if not figure or not reference:
        return "–"
    ratio = figure / reference
    met = ratio <= TARGETS[target] if target == "p99" else ratio >= TARGETS[target]
    return f"{ratio:.2f} {'✓' if met else '✗'}"


def table(part: PlaneRun, shapes: list[RequestShape]) -> str:
    """The Markdown table of one control plane: medians of the rounds."""
    results = part.results
    lines = [
        "| shape | rows: mean (max) | floor req/s | findata req/s | findata / floor "
        "| floor p99 ms | findata p99 ms | p99 / floor's | cache hits req/s | cache hits / floor "
        "| MCP req/s | MCP / REST |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for shape in shapes:
        floor, ours = results[(shape.name, "floor")], results[(shape.name, "findata")]
        floor_rate, rate = _median(floor, "per_second"), _median(ours, "per_second")
        floor_p99, p99 = _median(floor, "p99_ms"), _median(ours, "p99_ms")
        rows = part.rows[shape.name]
        line = (
            f"| {shape.label} | {statistics.mean(rows):,.0f} ({max(rows):,}) | {floor_rate:,.0f} "
            f"| {rate:,.0f} | {_mark(rate, floor_rate, 'rate')} | {floor_p99:,.1f} | {p99:,.1f} "
            f"| {_mark(p99, floor_p99, 'p99')} |"
        )
        if (shape.name, "cached") in results:
            cached = _median(results[(shape.name, "cached")], "per_second")
            line += f" {cached:,.0f} | {_mark(cached, floor_rate, 'cached')} |"
        else:
            line += " – | – |"
        if (shape.name, "mcp") in results:
            called = _median(results[(shape.name, "mcp")], "per_second")
            line += f" {called:,.0f} | {_mark(called, rate, 'mcp')} |"
        else:
            line += " – | – |"
        lines.append(line)
    return "\n".join(lines)


def report_problems(part: PlaneRun) -> None:
    """Say loudly when a server refused requests (429: findata's quotas; "mcp N": a tool call
    refused with REST status N), answered from its cache where it should not have, or when
    connections failed."""
    for (name, mode), runs in part.results.items():
        where = f"{part.plane.name}, {name}, {mode}"
        statuses: dict[str, int] = {}
        for run in runs:
            for status, n in run.statuses.items():
                statuses[status] = statuses.get(status, 0) + n
        non2xx = sum(run.non2xx for run in runs)
        if non2xx:
            quota = ""
            if any(status.endswith("429") for status in statuses):
                quota = "\nQUOTA REFUSALS (429): these figures are not findata's answers"
            banner = "!" * 78
            print(f"\n{banner}\n{where}: {non2xx} refused or failed answers {statuses}{quota}")
            print(banner)
        hits = sum(run.cache_hits for run in runs)
        if hits and mode != "cached":
            banner = "!" * 78
            print(f"\n{banner}\n{where}: {hits} answers came from the response cache\n{banner}")
        errors = sum(run.socket_errors + run.timeouts for run in runs)
        if errors:
            print(f"\nwarning: {where}: {errors} socket errors or timeouts")


def parse_arguments() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--home", type=Path, default=None, help="a findata home (written to)")
    parser.add_argument("--list", action="store_true", help="name the shapes and stop")
    parser.add_argument("--shapes", help="a comma-separated subset (default: every shape)")
    parser.add_argument(
        "--control-planes",
        default="sqlite,postgres",
        type=lambda text: [name.strip() for name in text.split(",")],
        help="sqlite, postgres or both (default), measured in that order",
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="per run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds per run, unrecorded")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument("--samples", type=int, default=10, help="honesty check requests/shape")
    parser.add_argument(
        "--cached",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also measure findata's cache hits (default: on)",
    )
    parser.add_argument(
        "--mcp",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also measure each shape through MCP (default: on)",
    )
    parser.add_argument(
        "--postgres",
        default="postgresql://postgres@127.0.0.1:5432",
        help="the PostgreSQL server where a database is made for the run (dropped after it)",
    )
    parser.add_argument(
        "--database-url",
        help="a PostgreSQL control plane to use instead (postgresql+psycopg://…/db, kept)",
    )
    parser.add_argument(
        "--cache-url",
        default="redis://127.0.0.1:6379/7",
        help="the Redis database of the PostgreSQL part (FLUSHED before and after the run)",
    )
    parser.add_argument("--server-core", type=int, default=0)
    parser.add_argument("--wrk-core", type=int, default=1)
    args = parser.parse_args()
    unknown = set(args.control_planes) - {"sqlite", "postgres"}
    if unknown or not args.control_planes:
        parser.error(f"--control-planes: sqlite and/or postgres, not {', '.join(unknown)}")
    cores = os.sched_getaffinity(0)
    if not {args.server_core, args.wrk_core} <= cores or args.server_core == args.wrk_core:
        print(f"cores {sorted(cores)}: not pinning (needs two distinct cores)", file=sys.stderr)
        args.server_core = args.wrk_core = None
    return args


def start_findata(
    args: argparse.Namespace, home: Path, plane: ControlPlane, logs: Path, quotas: bool
) -> Server:
    """``findata serve --workers 1`` on ``plane`` (with ``quotas`` off: nothing counted)."""
    env = findata_env(home, plane.database_url)
    if plane.cache_url:
        env["FINDATA_CACHE_URL"] = plane.cache_url
    if not quotas:
        env["FINDATA_QUOTAS_ENABLED"] = "false"
    port = free_port()
    command = [str(FINDATA), "serve", "--port", str(port), "--workers", "1"]
    name = f"findata-{plane.name}" + ("" if quotas else "-quotas-off")
    return start_server(name, pinned(args.server_core, command), env, port, logs, "/v1/status")


def main() -> None:
    """Set up, check the floor's honesty for every shape, measure, print the tables; stop every
    server and clean up what the run made."""
    args = parse_arguments()
    if args.list:
        for shape in build_shapes(*_listing_version(args.home)):
            print(f"{shape.name:17s} {shape.label}")
        return
    wrk = ensure_wrk()
    home, _ = prepare_home(args.home, "findata-shapes-bench-")
    logs = Path(tempfile.mkdtemp(prefix="findata-shapes-logs-"))
    today = dt.datetime.now(dt.UTC).date()
    servers: list[Server] = []
    parts: list[PlaneRun] = []
    shapes: list[RequestShape] = []
    scripts: dict[str, Path] = {}
    floor: Server | None = None
    version = ""
    with control_planes(args) as planes, servers_stopped_at_exit(servers):
        for plane in planes:
            if plane.database_url:
                prepare_home(home, "findata-shapes-bench-", plane.database_url)
            main_server = start_findata(args, home, plane, logs, quotas=True)
            servers.append(main_server)
            status = httpx.get(main_server.url + "/v1/status", timeout=30).json()
            if floor is None:
                version = status["version"]
                as_of = dt.date.fromisoformat(status["datasets"]["prices"]["data_through"])
                (database,) = (home / "published").glob(f"{version}*.duckdb")
                shapes = select_shapes(build_shapes(database, as_of, today), args.shapes)
                for shape in shapes:
                    scripts[shape.name] = logs / f"{shape.name}.lua"
                    scripts[shape.name].write_text(shape.lua())
                port = free_port()
                command = [sys.executable, str(FLOOR_SERVER), "--db", str(database)]
                command += ["--port", str(port)]
                probe = "/v1/search?q=zz&limit=1"
                floor = start_server(
                    "floor", pinned(args.server_core, command), os.environ.copy(), port, logs, probe
                )
                servers.append(floor)
                print(
                    f"home {home}, version {version}, prices through {as_of}, today {today}; "
                    f"logs and wrk scripts in {logs}"
                )
            elif status["version"] != version:
                raise SystemExit(f"{plane.name}: findata serves {status['version']}, not {version}")
            by_quotas = {True: main_server}
            if any(not shape.quotas for shape in shapes):
                by_quotas[False] = start_findata(args, home, plane, logs, quotas=False)
                servers.append(by_quotas[False])
            part = PlaneRun(plane, by_quotas, Keys(plane.database_url or _sqlite_url(home)))
            parts.append(part)
            for shape in shapes:
                key = part.keys.new(shape.plan)
                server = by_quotas[shape.quotas]
                part.rows[shape.name] = check_shape(
                    shape, floor, server, key, args.samples, args.mcp
                )
            print(
                f"{plane.name}: honesty check passed for every shape ({args.samples} requests "
                "each: the floor's data equal to findata's, REST and MCP)",
                flush=True,
            )
            measure(args, wrk, scripts, shapes, floor, part)
            for server in by_quotas.values():
                server.stop()
            part.keys.close()

    pinning = (
        f"servers on core {args.server_core}, wrk on core {args.wrk_core}"
        if args.server_core is not None
        else "no pinning"
    )
    print(
        f"\nversion {version}; medians of {args.rounds} rounds of {args.seconds:g} s per shape "
        f"and mode, {args.connections} connections, {pinning}; a new request every time (cache "
        "hits: the same URL every time, over the floor's uncached req/s); targets (issue 45): "
        "findata ≥ 1.5× the floor's req/s, p99 ≤ 1.5× the floor's, cache hits ≥ 5×, "
        "MCP ≥ 0.9× REST."
    )
    for part in parts:
        print(f"\n### {part.plane.label}\n")
        print(table(part, shapes))
        report_problems(part)


def _sqlite_url(home: Path) -> str:
    return Settings(home=home).control_plane_url


def _listing_version(home: Path | None) -> tuple[Path, dt.date, dt.date]:
    """For ``--list``: the home's newest version, its last price date, and today."""
    if home is None:
        raise SystemExit("--list needs --home (a home with a published version)")
    database = sorted((home / "published").glob("*.duckdb"))[-1]
    with open_version(database) as connection:
        (as_of,) = connection.execute("SELECT max(date) FROM prices").fetchall()[0]
    return database, as_of, dt.datetime.now(dt.UTC).date()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        raise SystemExit("interrupted: every server started here is stopped") from None
