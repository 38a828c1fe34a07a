"""``/v1/resolve/{ticker}``: what up to 10 tickers named on a date (spec: "Resolve entity",
"Keyless access", "Ambiguity candidate", the 404 and 409 rows of "Errors").

The contract declares no ``subject``: the generated route's subject step would answer an issuer
without a listed security with the prices text, and resolve has its own. This module parses the
path, checks the plan's ticker count, resolves at security grain and raises the 404/409 itself.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall
from findata.api.endpoints.index import removal_known_on
from findata.api.errors import BadRequest, NotFound
from findata.api.query import column, fetch_dicts_of_sql, slot
from findata.api.resolution import Resolution, resolve_tickers
from findata.api.subjects import ambiguous_ticker, check_subject_count, parse_tickers
from findata.contracts.endpoints import Subject

#: the plan's limit for resolve (Free and keyless 1, paid 10); the path's parameter name
SUBJECT = Subject(path_parameter="ticker", grain="security", limit="resolve_tickers_per_request")

NO_TICKER = "Provide a ticker in the path."
UNLISTED = (
    "No listed security on {on} for {ticker}: it names {issuer} (entity_id {id}); "
    "pass entity_id={id} for issuer-level data."
)
AMBIGUOUS_WARNING = (
    "Ticker {ticker} is ambiguous on {on} and was not resolved; see meta.tickers_ambiguous and "
    "pass entity_id=<id>."
)
ENDED_WARNING = (
    "Ticker {ticker} names no listed security on {on}: it last named {name} (entity_id {id}) "
    "until {valid_to}."
)
FUTURE_WARNING = "date {asked} is after today; resolved as of today ({today})."

#: the datasets each body reads, for ``meta.freshness``
KEYLESS_DATASETS = ("entities", "succession_links", "ticker_history")
FULL_DATASETS = ("entities", "index_membership", "succession_links", "ticker_history")

CLASSIFICATIONS = (
    "sic_code", "sic_description", "naics_code", "gics_sector", "gics_group",
    "classification_as_of",
)  # fmt: skip
#: what a kept membership or link costs, about (a dict of 5-9 values)
LINKED_ROW_BYTES = 600
SUCCESSION_COLUMNS = (
    "link_type", "from_ticker", "from_entity_id", "from_valid_from", "from_valid_to",
    "to_ticker", "to_entity_id", "change_date", "to_valid_to",
)  # fmt: skip


def handle(call: EndpointCall) -> EndpointAnswer:
    """The resolve body of the path's tickers on ``date`` (today, UTC, by default)."""
    tickers = parse_tickers(call.path.get("ticker"))
    if not tickers:
        raise BadRequest(NO_TICKER)
    check_subject_count(SUBJECT, call.plan, tickers, [])
    on = _resolve_date(call)
    resolution = resolve_tickers(
        call.directory, tickers, on, "security", before_first_use="unmatched"
    )
    _refuse_when_nothing_resolved(resolution, on)

    keyless = call.owner is None
    entity_ids = resolution.entity_ids
    entities = _entities(call, entity_ids)
    periods = _periods(call, resolution, on)
    held = _linked_rows(call)  # None: the store is off, memberships and links are queried
    memberships = {} if keyless else _memberships(call, held, entity_ids, on)
    links = _succession(call, held, list(resolution.resolved))

    data: dict[str, Any] = {}
    warnings: list[str] = []
    for ticker, ids in resolution.resolved.items():
        items = []
        for entity_id in ids:
            period = periods[(ticker, entity_id)]
            entity = _entity(entities[entity_id], period, memberships.get(entity_id, []))
            if period["valid_to"] is not None and period["valid_to"] < on:
                warnings.append(
                    ENDED_WARNING.format(
                        ticker=ticker,
                        on=on.isoformat(),
                        name=entity["name"],
                        id=entity_id,
                        valid_to=period["valid_to"].isoformat(),
                    )
                )
            if keyless:
                # spec "Resolve entity": the keyless body omits the contract's keyed_only fields
                omitted = call.contract.fields.keyed_only
                entity = {name: value for name, value in entity.items() if name not in omitted}
            items.append(entity)
        data[ticker] = {"entities": items, "succession": links.get(ticker, [])}
    warnings += _partial_warnings(resolution, on)

    unresolved = set(resolution.unmatched) | set(resolution.unlisted)
    meta: dict[str, Any] = {
        "tickers_requested": tickers,
        "tickers_resolved": list(resolution.resolved),
        "tickers_unresolved": [t for t in tickers if t in unresolved],
    }
    if resolution.ambiguous:
        meta["tickers_ambiguous"] = resolution.ambiguous
    meta["resolved_as_of"] = on.isoformat()
    meta["freshness"] = _freshness(call, KEYLESS_DATASETS if keyless else FULL_DATASETS)
    return EndpointAnswer(
        rows=data,
        meta=meta,
        top={"restricted": True} if keyless else {},
        warnings=warnings,
        cache_control="no-store" if keyless else "public, max-age=86400",
        row_count=sum(len(item["entities"]) for item in data.values()),
    )


def _resolve_date(call: EndpointCall) -> dt.date:
    """``date``, today by default; a later date resolves as of today (nothing is known past it)."""
    asked: dt.date | None = call.params.get("date")
    if asked is None:
        return call.today
    if asked > call.today:
        call.warnings.append(
            FUTURE_WARNING.format(asked=asked.isoformat(), today=call.today.isoformat())
        )
        return call.today
    return asked


def _refuse_when_nothing_resolved(resolution: Resolution, on: dt.date) -> None:
    """409 when only ambiguous tickers are left, else 404 with resolve's texts."""
    if resolution.resolved:
        return
    if resolution.ambiguous:
        raise ambiguous_ticker(resolution, on)
    sentences = [_unlisted(ticker, issuer, on) for ticker, issuer in resolution.unlisted.items()]
    if resolution.unmatched:
        sentences.append(f"No matching entities for: {', '.join(resolution.unmatched)}")
    raise NotFound(" ".join(sentences))


def _unlisted(ticker: str, issuer: tuple[str, int], on: dt.date) -> str:
    name, entity_id = issuer
    return UNLISTED.format(on=on.isoformat(), ticker=ticker, issuer=name, id=entity_id)


def _partial_warnings(resolution: Resolution, on: dt.date) -> list[str]:
    """Request rule 8: what was not served when other tickers were."""
    warnings = [
        AMBIGUOUS_WARNING.format(ticker=ticker, on=on.isoformat())
        for ticker in resolution.ambiguous
    ]
    warnings += [_unlisted(t, issuer, on) for t, issuer in resolution.unlisted.items()]
    if resolution.unmatched:
        warnings.append(f"No matching entities for: {', '.join(resolution.unmatched)}")
    return warnings


def _entities(call: EndpointCall, entity_ids: list[int]) -> dict[int, dict[str, Any]]:
    """The entities' rows (from the version's directory, in memory)."""
    return call.directory.entities_among(entity_ids)


def _periods(
    call: EndpointCall, resolution: Resolution, on: dt.date
) -> dict[tuple[str, int], dict[str, Any]]:
    """Per (ticker, entity) the ticker period the resolution used: the latest begun by ``on``."""
    periods: dict[tuple[str, int], dict[str, Any]] = {}
    for ticker, ids in resolution.resolved.items():
        for entity_id in ids:
            period = call.directory.period_begun_by(ticker, entity_id, on)
            if period is not None:
                periods[(ticker, entity_id)] = period
    return periods


@dataclass(frozen=True)
class LinkedRows:
    """What resolve reads besides the directory, for a whole version: index memberships by
    entity and succession links by ticker, each in its query's order, with removals as
    recorded (kept in the row store, one entry per version)."""

    memberships: dict[int, list[dict[str, Any]]]
    links: dict[str, list[dict[str, Any]]]
    size: int


def _linked_rows(call: EndpointCall) -> LinkedRows | None:
    """The version's memberships and links from the row store (None when it is off or they
    do not fit: the queries are asked per request then)."""
    return call.row_store.kept(
        (call.version.label, "resolve", 0, "memberships and links"),
        functools.partial(_load_linked_rows, call),
    )


def _load_linked_rows(call: EndpointCall) -> LinkedRows:
    """Every membership and link of the version, read once."""
    memberships: dict[int, list[dict[str, Any]]] = {}
    for row in fetch_dicts_of_sql(call.data, _memberships_sql(None), {}):
        memberships.setdefault(row["entity_id"], []).append(row)
    links: dict[str, list[dict[str, Any]]] = {}
    rows = fetch_dicts_of_sql(call.data, _succession_sql(None), {})
    for row in rows:
        for ticker in dict.fromkeys((row["from_ticker"], row["to_ticker"])):
            links.setdefault(ticker, []).append(row)
    size = LINKED_ROW_BYTES * (sum(len(rows) for rows in memberships.values()) + len(rows))
    return LinkedRows(memberships, links, size)


def _memberships(
    call: EndpointCall, held: LinkedRows | None, entity_ids: list[int], on: dt.date
) -> dict[int, list[dict[str, Any]]]:
    """Index memberships as known on ``on``: every one added by then, its removal shown only
    once it has happened (a later removal is later knowledge; an earlier one stays listed).
    From the version's rows in memory (``held``, ``_removal_known_on``), else asked of DuckDB."""
    if held is not None:
        rows = [
            {**row, "removed_date": _removal_known_on(row["removed_date"], on)}
            for entity_id in entity_ids
            for row in held.memberships.get(entity_id, [])
            if row["added_date"] is None or row["added_date"] <= on
        ]
    else:
        values: dict[str, Any] = {f"entity_{n}": entity for n, entity in enumerate(entity_ids)}
        values["on"] = on
        rows = fetch_dicts_of_sql(call.data, _memberships_sql(len(entity_ids)), values)
    by_entity: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        by_entity.setdefault(row["entity_id"], []).append(
            {
                "index": row["index_code"].upper(),
                "index_name": row["index_name"],
                "added": row["added_date"],
                "removed": row["removed_date"],
            }
        )
    return by_entity


def _removal_known_on(removed: dt.date | None, on: dt.date) -> dt.date | None:
    """``index.removal_known_on`` for one kept row: the removal once it has happened."""
    return removed if removed is not None and removed <= on else None


@functools.lru_cache(maxsize=16)
def _memberships_sql(entities: int | None) -> str:
    """The SQL of ``_memberships`` for ``entities`` entity ids, built once; None: every
    membership of the version, removals as recorded (what ``_linked_rows`` keeps)."""
    if entities is None:
        return (
            exp.select("entity_id", "index_code", "index_name", "added_date", "removed_date")
            .from_("index_membership")
            .order_by("entity_id", "index_code", "added_date", "membership_id")
            .sql(dialect="duckdb")
        )
    return (
        exp.select(
            "entity_id",
            "index_code",
            "index_name",
            "added_date",
            exp.alias_(removal_known_on(slot("on")), "removed_date"),
        )
        .from_("index_membership")
        .where(column("entity_id").isin(*(slot(f"entity_{n}") for n in range(entities))))
        .where(
            exp.or_(
                column("added_date").is_(exp.null()),
                exp.LTE(this=column("added_date"), expression=slot("on")),
            )
        )
        .order_by("entity_id", "index_code", "added_date", "membership_id")
        .sql(dialect="duckdb")
    )


def _succession(
    call: EndpointCall, held: LinkedRows | None, tickers: list[str]
) -> dict[str, list[dict[str, Any]]]:
    """Per ticker, every succession link from or to it (renamed, reused, reassigned), from
    the version's rows in memory (``held``) or asked of DuckDB."""
    if not tickers:
        return {}
    if held is not None:
        return {ticker: held.links[ticker] for ticker in tickers if ticker in held.links}
    values = {f"ticker_{n}": ticker for n, ticker in enumerate(tickers)}
    by_ticker: dict[str, list[dict[str, Any]]] = {}
    for row in fetch_dicts_of_sql(call.data, _succession_sql(len(tickers)), values):
        for ticker in dict.fromkeys((row["from_ticker"], row["to_ticker"])):
            if ticker in tickers:
                by_ticker.setdefault(ticker, []).append(row)
    return by_ticker


@functools.lru_cache(maxsize=16)
def _succession_sql(tickers: int | None) -> str:
    """The SQL of ``_succession`` for ``tickers`` tickers, built once; None: every link of
    the version (what ``_linked_rows`` keeps)."""
    order = ("change_date", "from_ticker", "from_entity_id", "to_ticker", "to_entity_id")
    if tickers is None:
        return (
            exp.select(*SUCCESSION_COLUMNS)
            .from_("succession_links")
            .order_by(*order)
            .sql(dialect="duckdb")
        )
    named = [slot(f"ticker_{n}") for n in range(tickers)]
    return (
        exp.select(*SUCCESSION_COLUMNS)
        .from_("succession_links")
        .where(
            exp.or_(
                column("from_ticker").isin(*named),
                column("to_ticker").isin(*[name.copy() for name in named]),
            )
        )
        .order_by(*order)
        .sql(dialect="duckdb")
    )


def _entity(
    row: dict[str, Any], period: dict[str, Any], memberships: list[dict[str, Any]]
) -> dict[str, Any]:
    """The spec's resolve entity (full body); exchange and class as of the ticker's period."""
    return {
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


def _freshness(call: EndpointCall, datasets: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """The datasets read, each with its data_through and the version's publication time."""
    return {
        name: {
            "data_through": call.version.data_through.get(name),
            "published_at": call.version.published_at,
        }
        for name in datasets
    }
