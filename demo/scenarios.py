"""The manifest of the demo's interesting cases (``scenarios.json``, keys of DESIGN.md)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from findata.demo.documents import Filing13F
from findata.demo.fundamentals import IssuerFilings
from findata.demo.holdings import Amendments, Manager
from findata.demo.indexes import INDEX_NAMES, Membership, sp500_committee
from findata.demo.price_history import PriceHistory
from findata.demo.scenario_checks import ScenarioError
from findata.demo.universe import Issuer, Security, Universe

#: a string that several demo manager names contain (see holdings._MANAGER_KINDS)
MANAGER_SEARCH = "Capital"


def _iso(day: dt.date | None) -> str | None:
    return None if day is None else day.isoformat()


def _current_ticker(security: Security, as_of: dt.date) -> str:
    ticker = security.ticker_on(as_of)
    if ticker is None:
        raise ValueError(f"security {security.entity_id} has no ticker on {as_of}")
    return ticker


def _replacement_events(
    universe: Universe, memberships: list[Membership]
) -> tuple[Membership, Membership]:
    """The sp500 membership that the committee's replacement starts, and the one it ends."""
    replacement = sp500_committee(universe)
    sp500 = [m for m in memberships if m.index == "sp500"]
    added = [
        m
        for m in sp500
        if m.security.entity_id == replacement.joining and m.added == replacement.day
    ]
    removed = [
        m
        for m in sp500
        if m.security.entity_id == replacement.leaving and m.removed == replacement.day
    ]
    if len(added) != 1 or len(removed) != 1:
        raise ScenarioError(f"the sp500 replacement of {replacement} is not in the rosters")
    return added[0], removed[0]


def _holdings_amendments(manager: Manager, amendments: Amendments) -> dict[str, Any]:
    """The manager's two 13F-HR/A: what each amends and what it changes."""
    return {
        "manager_id": manager.manager_id,
        "restatement": {
            "report_date": amendments.restated.period.isoformat(),
            "original_accession": amendments.restated.accession,
            "amendment_accession": amendments.restatement.accession,
            "corrected_cusip": amendments.corrected_cusip,
            "dropped_cusip": amendments.dropped_cusip,
        },
        "new_holdings": {
            "report_date": amendments.added_to.period.isoformat(),
            "original_accession": amendments.added_to.accession,
            "amendment_accession": amendments.new_holdings.accession,
            "added_cusips": [h.cusip for h in amendments.new_holdings.holdings],
        },
    }


def build_scenarios(
    universe: Universe,
    history: PriceHistory,
    *,
    restating: Issuer,
    restatement: IssuerFilings,
    insider_issuer: Issuer,
    manager: Manager,
    thirteen_fs: list[Filing13F],
    amendments: Amendments,
    memberships: list[Membership],
) -> dict[str, Any]:
    """Every DESIGN.md scenario key, from the cases the generator built on purpose."""
    as_of = universe.as_of
    special = universe.special
    plain: Security = special["plain"]
    dual, shared, classes = special["share_classes"]
    amb_ticker, amb_date, amb_securities = special["ambiguous"]
    reused_ticker, reused_securities = special["reused"]
    old_ticker, new_ticker, renamed, change = special["renamed"]
    delisted: Security = special["delisted"]
    orphan_ticker, orphan_date, orphan = special["issuer_without_listing"]

    plain_ticker = _current_ticker(plain, as_of)
    splits = [a for a in history.actions if a.security is plain and a.action == "split"]
    dividends = [a for a in history.actions if a.security is plain and a.action == "dividend"]
    if restatement.restatement is None:
        raise ValueError(f"{restating.name} has no restatement: history too short")
    period_end, first_known, restated_known = restatement.restatement

    held = [
        f.period
        for f in thirteen_fs
        if f.manager_cik == manager.cik
        and f.amendment_number is None
        and any(h.cusip == plain.cusip and h.put_call is None for h in f.holdings)
    ]

    added, removed = _replacement_events(universe, memberships)

    return {
        "as_of": as_of.isoformat(),
        "plain": {"ticker": plain_ticker, "entity_id": plain.entity_id},
        "share_classes": {
            "issuer_entity_id": dual.entity_id,
            "shared_ticker": shared,
            "class_tickers": [f"{shared}-{s.share_class}" for s in classes],
            "security_entity_ids": [s.entity_id for s in classes],
        },
        "ambiguous": {
            "ticker": amb_ticker,
            "date": amb_date.isoformat(),
            "entity_ids": [s.entity_id for s in amb_securities],
        },
        "reused": {
            "ticker": reused_ticker,
            "periods": [
                {
                    "entity_id": s.entity_id,
                    "valid_from": _iso(p.valid_from),
                    "valid_to": _iso(p.valid_to),
                }
                for s in reused_securities
                for p in s.tickers
                if p.ticker == reused_ticker
            ],
        },
        "renamed": {
            "old_ticker": old_ticker,
            "new_ticker": new_ticker,
            "entity_id": renamed.entity_id,
            "change_date": change.isoformat(),
        },
        "delisted": {
            "ticker": delisted.tickers[-1].ticker,
            "entity_id": delisted.entity_id,
            "last_date": _iso(delisted.delisted),
        },
        "issuer_without_listing": {
            "ticker": orphan_ticker,
            "date": orphan_date.isoformat(),
            "issuer_entity_id": orphan.entity_id,
        },
        "split": {
            "ticker": plain_ticker,
            "date": splits[-1].ex_date.isoformat(),
            "ratio": splits[-1].ratio,
        },
        "dividend": {
            "ticker": plain_ticker,
            "date": dividends[-1].ex_date.isoformat(),
            "amount": dividends[-1].amount,
        },
        "restatement": {
            "ticker": _current_ticker(restating.securities[0], as_of),
            "period_end": period_end.isoformat(),
            "first_known": first_known.isoformat(),
            "restated_known": restated_known.isoformat(),
        },
        "insiders": {"ticker": _current_ticker(insider_issuer.securities[0], as_of)},
        "holdings": {
            "ticker": plain_ticker,
            "manager_id": manager.manager_id,
            "quarters": [q.isoformat() for q in held],
        },
        "managers": {"search": MANAGER_SEARCH, "manager_id": manager.manager_id},
        "holdings_amendments": _holdings_amendments(manager, amendments),
        "index_events": {
            "index": "sp500",
            "added": {
                "ticker": added.security.ticker_on(added.added),
                "date": added.added.isoformat(),
            },
            "removed": {
                # its ticker on its last day as a member
                "ticker": removed.security.ticker_on(removed.removed - dt.timedelta(days=1)),
                "date": _iso(removed.removed),
            },
        },
        "indexes": sorted(INDEX_NAMES),
    }
