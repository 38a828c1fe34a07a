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
    directory: SubjectDirectory,
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
    periods = directory.periods_on(tickers, on, first_if_later=before_first_use == "first")
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
            classes = directory.class_tickers(issuers[0], on)
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


#: every column: resolve's body reads the entity's whole row from here too
ENTITIES_SQL = "SELECT * FROM entities"
PERIODS_SQL = (
    "SELECT h.ticker, h.entity_id, h.valid_from, h.valid_to, h.entity_grain, "
    "h.issuer_entity_id, h.ticker_kind, h.share_class, h.exchange, e.name, e.last_price_date, "
    "i.name AS issuer_name "
    "FROM ticker_history AS h JOIN entities AS e ON e.entity_id = h.entity_id "
    "JOIN entities AS i ON i.entity_id = h.issuer_entity_id ORDER BY h.ticker, h.entity_id"
)


class SubjectDirectory:
    """The entities and ticker periods of one published version, in memory: resolving a
    request's tickers and entity ids reads no table. Loaded once per version and worker
    (``api/published.py``); its rows are shared, never to be changed."""

    def __init__(self, entities: list[dict[str, Any]], periods: list[dict[str, Any]]) -> None:
        self._entities = {row["entity_id"]: row for row in entities}
        self._by_ticker: dict[str, list[dict[str, Any]]] = {}
        self._by_issuer: dict[int, list[dict[str, Any]]] = {}
        for row in periods:  # in ticker, entity order
            self._by_ticker.setdefault(row["ticker"], []).append(row)
            self._by_issuer.setdefault(row["issuer_entity_id"], []).append(row)

    @classmethod
    def load(cls, cursor: duckdb.DuckDBPyConnection) -> SubjectDirectory:
        """Read a version's ``entities`` and ``ticker_history`` (the service's own reading,
        once per version: not bound by the time limits of the request that opens it)."""
        return cls(_all_rows(cursor, ENTITIES_SQL), _all_rows(cursor, PERIODS_SQL))

    def entities_among(self, entity_ids: list[int]) -> dict[int, dict[str, Any]]:
        """The entities among ``entity_ids`` that exist, with their grain and issuer."""
        return {i: self._entities[i] for i in entity_ids if i in self._entities}

    def securities_of(self, issuers: set[int]) -> list[int]:
        """The security-grain entities of the issuers ``issuers``, in entity id order."""
        return sorted(
            entity_id
            for entity_id, row in self._entities.items()
            if row["entity_grain"] == "security" and row["issuer_entity_id"] in issuers
        )

    def period_begun_by(self, ticker: str, entity_id: int, on: dt.date) -> dict[str, Any] | None:
        """The period of ``ticker`` naming ``entity_id`` that began last by ``on`` (None when
        none had begun)."""
        begun = [
            row
            for row in self._by_ticker.get(ticker, [])
            if row["entity_id"] == entity_id and row["valid_from"] <= on
        ]
        return max(begun, key=lambda row: row["valid_from"], default=None)

    def periods_on(
        self, tickers: list[str], on: dt.date, *, first_if_later: bool
    ) -> dict[str, list[dict[str, Any]]]:
        """Per ticker, the periods holding ``on``; else those that ended last before it; else
        (``first_if_later``) those that began first after it."""
        chosen = {}
        for ticker in tickers:
            rows = self._by_ticker.get(ticker)
            if not rows:
                continue
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

    def security_tickers(self, issuers: list[int], on: dt.date) -> list[str]:
        """Every ticker (own or not) a security of the issuers ``issuers`` had on ``on``,
        sorted, once each."""
        return sorted(
            {
                r["ticker"]
                for issuer in issuers
                for r in self._by_issuer.get(issuer, [])
                if r["entity_grain"] == "security"
                and r["valid_from"] <= on
                and (r["valid_to"] is None or r["valid_to"] >= on)
            }
        )

    def class_tickers(self, issuer: int, on: dt.date) -> list[str]:
        """The own tickers of the issuer's securities on ``on``, sorted."""
        return sorted(
            r["ticker"]
            for r in self._by_issuer.get(issuer, [])
            if r["ticker_kind"] == "own"
            and r["entity_grain"] == "security"
            and r["valid_from"] <= on
            and (r["valid_to"] is None or r["valid_to"] >= on)
        )


def _all_rows(cursor: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    result = cursor.execute(sql)
    names = [d[0] for d in result.description]
    return [dict(zip(names, row, strict=True)) for row in result.fetchall()]
