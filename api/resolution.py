"""Tickers and entity ids to entities, on a date (spec: "Ambiguity candidate", the 404 and 409
rows of "Errors", request rules 8–10).

A ticker names the securities (or, with no listing, the issuer) whose ``ticker_history`` period
holds the date. A ticker that named nothing on that date but did before (a delisted ticker)
names what it named last; one first used after the date names what it named first (a known
ticker with no rows in the window answers 200 with no rows, not 404). At security grain a
ticker naming two securities is ambiguous; at company grain only a ticker naming two companies
is, and several share classes of one company are served at the company level with a warning.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Literal

import duckdb
from sqlglot import exp

from findata.api.query import Binder, column, fetch_dicts

Grain = Literal["security", "company"]

SHARE_CLASS_WARNING = (
    "Ticker {ticker} names more than one share class of {name}; served at the company level "
    "(entity_id {issuer}). Use a class ticker ({classes}) for one class."
)


@dataclass
class Resolution:
    """What the subjects of a request resolved to."""

    #: ticker (or entity id as text) -> the entity ids served for it
    resolved: dict[str, list[int]] = field(default_factory=dict)
    #: ambiguous ticker -> candidate objects (security grain) or entity ids (company grain)
    ambiguous: dict[str, list[Any]] = field(default_factory=dict)
    unmatched: list[str] = field(default_factory=list)
    #: company grain: ticker -> the securities it named (a class ticker names one)
    securities: dict[str, list[int]] = field(default_factory=dict)
    #: ticker -> (issuer name, issuer entity id): an issuer with no listed security on the date
    unlisted: dict[str, tuple[str, int]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def entity_ids(self) -> list[int]:
        """Every entity served, in request order, each once."""
        return list(dict.fromkeys(i for ids in self.resolved.values() for i in ids))


def resolve_tickers(
    cursor: duckdb.DuckDBPyConnection,
    tickers: list[str],
    on: dt.date,
    grain: Grain,
    candidates: Literal["objects", "entity_ids"] = "objects",
    *,
    before_first_use: Literal["first", "unmatched"] = "first",
) -> Resolution:
    """Resolve ``tickers`` on ``on`` at ``grain``; ambiguity candidates as objects (the
    securities named) or as the companies' entity ids. A ticker first used after ``on`` names
    what it named first (data endpoints: an empty window), or nothing (resolve: what the ticker
    named on that day)."""
    periods = _periods(cursor, tickers, on, before_first_use == "first")
    resolution = Resolution()
    for ticker in tickers:
        rows = periods.get(ticker, [])
        if not rows:
            resolution.unmatched.append(ticker)
            continue
        securities = [r for r in rows if r["entity_grain"] == "security"]
        if not securities:
            issuer = rows[0]
            resolution.unlisted[ticker] = (issuer["name"], issuer["entity_id"])
            continue
        if grain == "security":
            if len({r["entity_id"] for r in securities}) > 1:
                resolution.ambiguous[ticker] = [candidate(r) for r in securities]
            else:
                resolution.resolved[ticker] = [securities[0]["entity_id"]]
            continue
        issuers = sorted({r["issuer_entity_id"] for r in securities})
        if len(issuers) > 1:
            resolution.ambiguous[ticker] = (
                [candidate(r) for r in securities] if candidates == "objects" else issuers
            )
            continue
        resolution.resolved[ticker] = issuers
        resolution.securities[ticker] = sorted({r["entity_id"] for r in securities})
        if len({r["entity_id"] for r in securities}) > 1:
            classes = _class_tickers(cursor, issuers[0], on)
            resolution.warnings.append(
                SHARE_CLASS_WARNING.format(
                    ticker=ticker,
                    name=securities[0]["issuer_name"],
                    issuer=issuers[0],
                    classes=", ".join(classes),
                )
            )
    return resolution


def candidate(row: dict[str, Any]) -> dict[str, Any]:
    """An ambiguity candidate as the spec shows it."""
    return {
        "entity_id": row["entity_id"],
        "name": row["name"],
        "exchange": row["exchange"],
        "share_class": row["share_class"],
        "last_bar_date": row["last_price_date"],
        "valid_from": row["valid_from"],
        "valid_to": row["valid_to"],
    }


def known_entities(cursor: duckdb.DuckDBPyConnection, entity_ids: list[int]) -> dict[int, dict]:
    """The entities among ``entity_ids`` that exist, with their grain and issuer."""
    binder = Binder()
    query = (
        exp.select("entity_id", "entity_grain", "issuer_entity_id", "name", "ticker")
        .from_("entities")
        .where(column("entity_id").isin(*binder.each(entity_ids)))
    )
    return {row["entity_id"]: row for row in fetch_dicts(cursor, query, binder)}


def _periods(
    cursor: duckdb.DuckDBPyConnection, tickers: list[str], on: dt.date, first_if_later: bool
) -> dict[str, list[dict[str, Any]]]:
    """Per ticker, the periods holding ``on``; else those that ended last before it; else
    those that began first after it."""
    binder = Binder()
    query = (
        exp.select(
            "h.ticker",
            "h.entity_id",
            "h.valid_from",
            "h.valid_to",
            "h.entity_grain",
            "h.issuer_entity_id",
            "h.share_class",
            "h.exchange",
            "e.name",
            "e.last_price_date",
            exp.alias_(column("name", "i"), "issuer_name"),
        )
        .from_(exp.alias_(exp.to_table("ticker_history"), "h"))
        .join("entities AS e", on="e.entity_id = h.entity_id")
        .join("entities AS i", on="i.entity_id = h.issuer_entity_id")
        .where(column("ticker", "h").isin(*binder.each(tickers)))
        .order_by("h.ticker", "h.entity_id")
    )
    by_ticker: dict[str, list[dict[str, Any]]] = {}
    for row in fetch_dicts(cursor, query, binder):
        by_ticker.setdefault(row["ticker"], []).append(row)
    chosen = {}
    for ticker, rows in by_ticker.items():
        started = [r for r in rows if r["valid_from"] <= on]
        current = [r for r in started if r["valid_to"] is None or r["valid_to"] >= on]
        if current:
            chosen[ticker] = current
        elif started:
            last_end = max(r["valid_to"] for r in started)
            chosen[ticker] = [r for r in started if r["valid_to"] == last_end]
        elif first_if_later:
            first_start = min(r["valid_from"] for r in rows)
            chosen[ticker] = [r for r in rows if r["valid_from"] == first_start]
    return chosen


def valid_on(on: dt.date, binder: Binder) -> exp.Expression:
    """A ``ticker_history`` period holds ``on`` (``valid_to`` is the last day, inclusive)."""
    return exp.and_(
        exp.LTE(this=column("valid_from"), expression=binder(on)),
        exp.or_(
            column("valid_to").is_(exp.null()),
            exp.GTE(this=column("valid_to"), expression=binder(on)),
        ),
    )


def _class_tickers(cursor: duckdb.DuckDBPyConnection, issuer: int, on: dt.date) -> list[str]:
    binder = Binder()
    query = (
        exp.select("ticker")
        .from_("ticker_history")
        .where(column("issuer_entity_id").eq(binder(issuer)))
        .where(column("ticker_kind").eq(binder("own")))
        .where(column("entity_grain").eq(binder("security")))
        .where(valid_on(on, binder))
        .order_by("ticker")
    )
    return [row["ticker"] for row in fetch_dicts(cursor, query, binder)]
