"""``/v1/index/{index_name}``: the roster of an index, current or as of a date.

Also the helpers the events endpoint (``api/endpoints/index_events.py``) shares: reading the index
code from the path against the codes the published version holds, the index ``meta`` keys and
one offset page of a query with its total. The SQL is built once per shape of request (as of a
date or current; a window's bounds): building it with sqlglot cost more than DuckDB's queries.

A version's rosters are small (every membership interval of every index, and its members' own
tickers): the row store keeps them, one entry per version (``Rosters``), and a roster, its codes
and its grains are answered from them without DuckDB, by the same rule as the SQL (byte for
byte the same answers, ``tests/api/test_row_store.py``); with the store off, DuckDB is asked.
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall, offset_answer, offset_page_of
from findata.api.errors import BadRequest
from findata.api.query import column, fetch_dicts_of_sql, order_by, slot
from findata.contracts.endpoints import OrderTerm, load_endpoint_contract

#: the dataset whose version date bounds what the roster can know (its last trading date)
COVERAGE_DATASET = "prices"

#: each security's latest own ticker (the date bound is added per request): a membership's
#: stored ticker is the one it had when added, and a roster is labelled on its own date
LATEST_OWN_TICKER = sqlglot.parse_one(
    "SELECT entity_id, ticker FROM ticker_history WHERE ticker_kind = 'own' "
    "QUALIFY ROW_NUMBER() OVER (PARTITION BY entity_id ORDER BY valid_from DESC, ticker) = 1",
    dialect="duckdb",
)


def removal_known_on(day: exp.Expression, table: str | None = None) -> exp.Case:
    """``removed_date`` as known on ``day``: the date once the removal has happened (on or
    before ``day``), null before it, so that no dated answer shows a removal still to come."""
    removed = column("removed_date", table)
    return exp.Case().when(exp.LTE(this=removed, expression=day), removed.copy())


#: what a kept membership interval or own ticker costs, about (a small dict or tuple)
ROSTER_ROW_BYTES = 600
#: the roster's contract (the events endpoint reads the rosters' codes and grains too)
ROSTER = "index"


@dataclass(frozen=True)
class Rosters:
    """Every index's membership intervals of a version, in the roster's fields and order (the
    contract's, as DuckDB sorts it), with the index's member grains, and each member's own
    tickers (kept in the row store, one entry per version)."""

    #: index code -> its intervals, each a row of the roster's fields, in the roster's order
    intervals: dict[str, list[dict[str, Any]]]
    #: index code -> its distinct member grains, sorted
    grains: dict[str, list[str]]
    #: entity id -> its own tickers as (-valid_from's day number, ticker), ascending: the
    #: latest first, ties by ticker (``LATEST_OWN_TICKER``'s order)
    own_tickers: dict[int, list[tuple[int, str]]]
    size: int

    def ticker_on(self, entity_id: int | None, day: dt.date) -> str | None:
        """The member's latest own ticker valid from ``day`` or before (None: none is)."""
        tickers = self.own_tickers.get(entity_id) if entity_id is not None else None
        if not tickers:
            return None
        at = bisect.bisect_left(tickers, (-day.toordinal(), ""))
        return tickers[at][1] if at < len(tickers) else None

    def roster(
        self, code: str, as_of: dt.date | None, labelled_on: dt.date
    ) -> list[dict[str, Any]]:
        """The roster of ``code`` as of ``as_of`` (None: current), by ``_roster_sql``'s rule,
        labelled with the members' own tickers on ``labelled_on``."""
        rows = []
        for interval in self.intervals.get(code, []):
            added, removed = interval["added_date"], interval["removed_date"]
            if as_of is None:
                if removed is not None:
                    continue
            elif added is None or added > as_of or (removed is not None and removed <= as_of):
                continue
            label = self.ticker_on(interval["entity_id"], labelled_on)
            rows.append(
                {
                    **interval,
                    "ticker": label or interval["ticker"],
                    "removed_date": removed if as_of is None else _known_on(removed, as_of),
                }
            )
        return rows


def _known_on(removed: dt.date | None, day: dt.date) -> dt.date | None:
    """``removal_known_on`` of one value: the removal once it has happened by ``day``."""
    return removed if removed is not None and removed <= day else None


def _rosters(call: EndpointCall) -> Rosters | None:
    """The version's rosters from the row store (None when it is off or they do not fit)."""
    return call.row_store.kept(
        (call.version.label, "index_membership", 0, "rosters"),
        functools.partial(_load_rosters, call),
    )


def _load_rosters(call: EndpointCall) -> Rosters:
    """Every membership interval and own ticker of the version, read once."""
    contract = load_endpoint_contract(ROSTER)
    intervals: dict[str, list[dict[str, Any]]] = {}
    for row in fetch_dicts_of_sql(call.data, _intervals_sql(), {}):
        intervals.setdefault(row["index_code"], []).append(
            {name: row[name] for name in contract.fields.identity}
        )
    grains = {
        code: sorted({row["member_grain"] for row in rows}) for code, rows in intervals.items()
    }
    own = fetch_dicts_of_sql(call.data, _own_tickers_sql(), {})
    own_tickers: dict[int, list[tuple[int, str]]] = {}
    for row in own:
        own_tickers.setdefault(row["entity_id"], []).append(
            (-row["valid_from"].toordinal(), row["ticker"])
        )
    for tickers in own_tickers.values():
        tickers.sort()
    kept = sum(len(rows) for rows in intervals.values()) + len(own)
    return Rosters(intervals, grains, own_tickers, ROSTER_ROW_BYTES * kept)


@functools.cache
def _intervals_sql() -> str:
    """Every membership interval of every index, in the roster's order."""
    contract = load_endpoint_contract(ROSTER)
    fields = dict.fromkeys(["index_code", *contract.fields.identity, *contract.fields.hidden])
    query = exp.select(*fields).from_("index_membership").order_by(*order_by(contract.order))
    return query.sql(dialect="duckdb")


@functools.cache
def _own_tickers_sql() -> str:
    """Every own ticker with its first day (``LATEST_OWN_TICKER``'s rows)."""
    query = (
        exp.select("entity_id", "valid_from", "ticker")
        .from_("ticker_history")
        .where("ticker_kind = 'own' AND valid_from IS NOT NULL")
    )
    return query.sql(dialect="duckdb")


def handle(call: EndpointCall) -> EndpointAnswer:
    """One page of the roster of the path's index, as of ``as_of`` or current."""
    code = index_code(call)
    as_of: dt.date | None = call.params.get("as_of")
    held = _rosters(call)
    if held is not None:
        answer = offset_page_of(call, held.roster(code, as_of, as_of or call.today))
    else:
        values: dict[str, Any] = {"code": code, "labelled_on": as_of or call.today}
        if as_of is not None:
            values["as_of"] = as_of
        contract = call.contract
        sqls = _roster_sql(
            as_of is not None, tuple(contract.fields.identity), tuple(contract.order)
        )
        answer = offset_page(call, sqls, values)
    answer.meta = {"index": code.upper(), **({"as_of": as_of.isoformat()} if as_of else {})}
    answer.meta.update(index_meta(call, code))
    return answer


@functools.lru_cache(maxsize=16)
def _roster_sql(
    has_as_of: bool, fields: tuple[str, ...], order: tuple[OrderTerm, ...]
) -> tuple[str, str]:
    """The total's and a page's SQL of a roster, current or as of a date, built once."""
    labels = LATEST_OWN_TICKER.copy().where(
        exp.LTE(this=column("valid_from"), expression=slot("labelled_on"))
    )
    removed = column("removed_date", "m")
    day = slot("as_of") if has_as_of else None
    members = (
        exp.select(
            column("entity_id", "m"),
            exp.alias_(
                exp.func("COALESCE", column("ticker", "l"), column("ticker", "m")), "ticker"
            ),
            column("entity_name", "m"),
            column("added_date", "m"),
            # a roster says what was known on its date: no removal still to come
            removed if day is None else exp.alias_(removal_known_on(day, "m"), "removed_date"),
            column("member_grain", "m"),
            column("membership_id", "m"),
        )
        .from_(exp.alias_(exp.to_table("index_membership"), "m"))
        .join(
            exp.alias_(labels.subquery(), "l"),
            on=exp.EQ(this=column("entity_id", "l"), expression=column("entity_id", "m")),
            join_type="left",
        )
        .where(exp.EQ(this=column("index_code", "m"), expression=slot("code")))
    )
    if day is None:
        # the current roster: every interval still open (added_date known or not)
        members = members.where(exp.Is(this=removed.copy(), expression=exp.Null()))
    else:
        # added_date inclusive, removed_date exclusive (the first day out); an unknown
        # added_date never satisfies the first test, so such intervals are in no as_of roster
        members = members.where(
            exp.LTE(this=column("added_date", "m"), expression=day.copy())
        ).where(
            exp.or_(
                exp.Is(this=removed.copy(), expression=exp.Null()),
                exp.GT(this=removed.copy(), expression=day.copy()),
            )
        )
    return offset_page_sql(members, fields, order)


def available_indexes(call: EndpointCall) -> list[str]:
    """The index codes of the published version (lower case, sorted)."""
    held = _rosters(call)
    if held is not None:
        return sorted(held.intervals)
    return sorted(row["index_code"] for row in fetch_dicts_of_sql(call.data, _codes_sql(), {}))


@functools.cache
def _codes_sql() -> str:
    query = exp.select(column("index_code")).distinct().from_("index_membership")
    return query.sql(dialect="duckdb")


def index_code(call: EndpointCall) -> str:
    """The path's index code, lower case; 400 listing the available codes when it is unknown.

    Any letter case is accepted, so ``meta.index`` (upper case) can be sent back as it is."""
    sent = call.path["index_name"]
    available = available_indexes(call)
    if sent.lower() not in available:
        raise BadRequest(f"Unknown index: {sent}. Available: {', '.join(available)}")
    return sent.lower()


def index_meta(call: EndpointCall, code: str) -> dict[str, Any]:
    """``entity_id_grain`` (what the members' entity_id identifies) and ``coverage_end``."""
    held = _rosters(call)
    if held is not None:
        grains = held.grains.get(code, [])
    else:
        rows = fetch_dicts_of_sql(call.data, _grains_sql(), {"code": code})
        grains = sorted(row["member_grain"] for row in rows)
    through = call.version.data_through
    return {
        # one grain in practice (`security`); a mix would be named as such, never hidden
        "entity_id_grain": grains[0] if len(grains) == 1 else ("mixed" if grains else None),
        "coverage_end": through.get(COVERAGE_DATASET) or through.get(call.contract.dataset or ""),
    }


@functools.cache
def _grains_sql() -> str:
    query = (
        exp.select(column("member_grain"))
        .distinct()
        .from_("index_membership")
        .where(exp.EQ(this=column("index_code"), expression=slot("code")))
    )
    return query.sql(dialect="duckdb")


def offset_page_sql(
    rows_from: exp.Select, fields: tuple[str, ...], order: tuple[OrderTerm, ...]
) -> tuple[str, str]:
    """The SQL of the total of ``rows_from`` and of one offset page of it in ``order``
    (``$page_limit`` rows from ``$page_offset``). ``rows_from`` must select every identity and
    hidden field of the contract."""
    source = exp.alias_(rows_from.subquery(), "answer")
    total = exp.select(exp.alias_(exp.func("COUNT", exp.Star()), "total")).from_(source)
    page = (
        exp.select(*fields)
        .from_(source.copy())
        .order_by(*order_by(order))
        .limit(slot("page_limit"))
        .offset(slot("page_offset"))
    )
    return total.sql(dialect="duckdb"), page.sql(dialect="duckdb")


def offset_page(
    call: EndpointCall, sqls: tuple[str, str], values: dict[str, Any]
) -> EndpointAnswer:
    """One offset page with the total of its rows, from ``offset_page_sql``'s SQL and this
    request's ``values``."""
    assert call.page is not None
    total_sql, page_sql = sqls
    (counted,) = fetch_dicts_of_sql(call.data, total_sql, values)
    page = {"page_limit": call.page.limit, "page_offset": call.page.offset}
    rows = fetch_dicts_of_sql(call.data, page_sql, {**values, **page})
    return offset_answer(call, rows, counted["total"])
