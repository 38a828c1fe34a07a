"""``/v1/index/{index_name}``: the roster of an index, current or as of a date.

Also the helpers the events endpoint (``api/endpoints/index_events.py``) shares: reading the index
code from the path against the codes the published version holds, the index ``meta`` keys and
one offset page of a query with its total. The SQL is built once per shape of request (as of a
date or current; a window's bounds): building it with sqlglot cost more than DuckDB's queries.
"""

from __future__ import annotations

import datetime as dt
import functools
from typing import Any

import sqlglot
from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall
from findata.api.errors import BadRequest
from findata.api.query import column, fetch_dicts_of_sql, order_by, slot
from findata.contracts.endpoints import OrderTerm

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


def handle(call: EndpointCall) -> EndpointAnswer:
    """One page of the roster of the path's index, as of ``as_of`` or current."""
    code = index_code(call)
    as_of: dt.date | None = call.params.get("as_of")
    values: dict[str, Any] = {"code": code, "labelled_on": as_of or call.today}
    if as_of is not None:
        values["as_of"] = as_of
    contract = call.contract
    sqls = _roster_sql(as_of is not None, tuple(contract.fields.identity), tuple(contract.order))
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
    total: int = counted["total"]
    page = {"page_limit": call.page.limit, "page_offset": call.page.offset}
    rows = fetch_dicts_of_sql(call.data, page_sql, {**values, **page})
    has_more = call.page.offset + len(rows) < total
    return EndpointAnswer(
        rows=rows,
        has_more=has_more,
        next_offset=call.page.offset + len(rows) if has_more else None,
        total=total,
    )
