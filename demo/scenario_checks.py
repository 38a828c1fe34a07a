"""The manifest's promise, checked before the demo is written: every scenario of
``scenarios.json`` is exactly the case its key names and nothing else.

A scenario names a ticker and dates; on those dates the ticker must name the entities the
scenario is about and nothing else (only ``ambiguous`` names two companies, and the
``share_classes`` shared ticker both classes of one). A removal from an index on a ticker that
two companies hold, say, would show an ambiguous ticker (409) instead of an index removal.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from findata.dates import years_before
from findata.demo.indexes import Membership
from findata.demo.price_history import PriceHistory
from findata.demo.tickers import TickerBook
from findata.demo.universe import Universe


class ScenarioError(ValueError):
    """A scenario of the manifest is not the case its key names."""


def _day(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


class _Checker:
    """Collects every problem of a manifest, so that one failure reports them all."""

    def __init__(self, universe: Universe, history: PriceHistory) -> None:
        self.book = TickerBook(universe)
        self.history = history
        self.securities = {s.entity_id: s for s in universe.securities}
        self.issuers = {i.entity_id: i for i in universe.issuers}
        self.problems: list[str] = []

    def fail(self, scenario: str, problem: str) -> None:
        self.problems.append(f"{scenario}: {problem}")

    def names(self, scenario: str, ticker: str, day: dt.date, expected: set[int]) -> None:
        """``ticker`` names exactly ``expected`` on ``day`` (nothing, when empty)."""
        named = self.book.named_on(ticker, day)
        if named != expected:
            self.fail(
                scenario,
                f"{ticker!r} on {day} names {sorted(named) or 'nothing'}, "
                f"expected {sorted(expected) or 'nothing'}",
            )

    def names_one(self, scenario: str, ticker: str, day: dt.date) -> int | None:
        """The one entity ``ticker`` names on ``day``; a problem (and None) otherwise."""
        named = self.book.named_on(ticker, day)
        if len(named) != 1:
            self.fail(scenario, f"{ticker!r} on {day} names {sorted(named) or 'nothing'}")
            return None
        return next(iter(named))

    def trades(self, scenario: str, entity_id: int, day: dt.date) -> None:
        """The security has a bar on ``day``."""
        if not self.history.traded_on(entity_id, day):
            self.fail(scenario, f"entity {entity_id} has no price on {day}")

    def issuer_of(self, entity_id: int) -> int | None:
        security = self.securities.get(entity_id)
        return None if security is None else security.issuer.entity_id


def check_manifest(
    manifest: dict[str, Any],
    universe: Universe,
    history: PriceHistory,
    memberships: list[Membership],
) -> None:
    """Raise ``ScenarioError`` (listing every problem) unless each scenario is its case."""
    check = _Checker(universe, history)
    as_of = _day(manifest["as_of"])
    if as_of != universe.as_of:
        check.fail("as_of", f"{as_of} is not the last session {universe.as_of}")
    _check_listings(check, manifest, as_of)
    _check_ticker_changes(check, manifest)
    _check_actions(check, manifest)
    for scenario in ("restatement", "insiders", "holdings"):
        check.names_one(scenario, manifest[scenario]["ticker"], as_of)
    _check_index_events(check, manifest["index_events"], memberships)
    if check.problems:
        raise ScenarioError(
            "the demo's scenarios are not the cases they name:\n  " + "\n  ".join(check.problems)
        )


def _check_listings(check: _Checker, manifest: dict[str, Any], as_of: dt.date) -> None:
    """plain, share_classes, ambiguous, issuer_without_listing."""
    plain = manifest["plain"]
    check.names("plain", plain["ticker"], as_of, {plain["entity_id"]})
    first_bar = check.history.first_bar(plain["entity_id"])
    if first_bar is None or first_bar > years_before(as_of, 3):
        check.fail("plain", f"prices start {first_bar}, less than 3 years before {as_of}")
    check.trades("plain", plain["entity_id"], as_of)

    classes = manifest["share_classes"]
    ids = classes["security_entity_ids"]
    check.names("share_classes", classes["shared_ticker"], as_of, set(ids))
    for ticker, entity_id in zip(classes["class_tickers"], ids, strict=True):
        check.names("share_classes", ticker, as_of, {entity_id})
    if {check.issuer_of(i) for i in ids} != {classes["issuer_entity_id"]} or len(ids) != 2:
        check.fail("share_classes", f"{ids} are not two classes of {classes['issuer_entity_id']}")

    ambiguous = manifest["ambiguous"]
    day = _day(ambiguous["date"])
    check.names("ambiguous", ambiguous["ticker"], day, set(ambiguous["entity_ids"]))
    if len({check.issuer_of(i) for i in ambiguous["entity_ids"]}) != 2:
        check.fail("ambiguous", f"{ambiguous['entity_ids']} are not securities of two companies")
    for entity_id in ambiguous["entity_ids"]:
        check.trades("ambiguous", entity_id, day)

    orphan = manifest["issuer_without_listing"]
    issuer_id = orphan["issuer_entity_id"]
    check.names("issuer_without_listing", orphan["ticker"], _day(orphan["date"]), {issuer_id})
    if issuer_id not in check.issuers:
        check.fail("issuer_without_listing", f"{issuer_id} is not an issuer")


def _check_ticker_changes(check: _Checker, manifest: dict[str, Any]) -> None:
    """reused, renamed, delisted: who the ticker names on each side of each change."""
    reused = manifest["reused"]
    periods = reused["periods"]
    for period in periods:
        check.names("reused", reused["ticker"], _day(period["valid_from"]), {period["entity_id"]})
        if period["valid_to"] is not None:
            check.names("reused", reused["ticker"], _day(period["valid_to"]), {period["entity_id"]})
    if len(periods) != 2 or len({check.issuer_of(p["entity_id"]) for p in periods}) != 2:
        check.fail("reused", "the ticker is not used by two companies")
    elif periods[0]["valid_to"] is None or periods[0]["valid_to"] >= periods[1]["valid_from"]:
        check.fail("reused", "the two uses of the ticker overlap")

    renamed = manifest["renamed"]
    change = _day(renamed["change_date"])
    before = change - dt.timedelta(days=1)
    entity = {renamed["entity_id"]}
    check.names("renamed", renamed["old_ticker"], before, entity)
    check.names("renamed", renamed["old_ticker"], change, set())
    check.names("renamed", renamed["new_ticker"], before, set())
    check.names("renamed", renamed["new_ticker"], change, entity)

    delisted = manifest["delisted"]
    last = _day(delisted["last_date"])
    check.names("delisted", delisted["ticker"], last, {delisted["entity_id"]})
    check.names("delisted", delisted["ticker"], last + dt.timedelta(days=1), set())
    check.trades("delisted", delisted["entity_id"], last)
    if check.history.last_bar(delisted["entity_id"]) != last:
        check.fail("delisted", f"prices do not stop on {last}")


def _check_actions(check: _Checker, manifest: dict[str, Any]) -> None:
    """split and dividend: the ticker names one security, which has that action that day."""
    for scenario, field in (("split", "ratio"), ("dividend", "amount")):
        case = manifest[scenario]
        day = _day(case["date"])
        entity_id = check.names_one(scenario, case["ticker"], day)
        if entity_id is None:
            continue
        found = [
            getattr(a, field)
            for a in check.history.actions
            if a.security.entity_id == entity_id and a.action == scenario and a.ex_date == day
        ]
        if found != [case[field]]:
            check.fail(scenario, f"entity {entity_id} has {scenario}s {found} on {day}")


def _check_index_events(
    check: _Checker, case: dict[str, Any], memberships: list[Membership]
) -> None:
    """The addition names the security added that day, not a member the day before; the removal
    names the security removed, on its last day as a member and on the removal date (a removal
    at a rebalance: it still trades under that ticker), and it never comes back."""
    index = case["index"]
    own = [m for m in memberships if m.index == index]
    added_day = _day(case["added"]["date"])
    entity_id = check.names_one("index_events.added", case["added"]["ticker"], added_day)
    if entity_id is not None:
        intervals = [m for m in own if m.security.entity_id == entity_id]
        if added_day not in {m.added for m in intervals}:
            check.fail("index_events.added", f"entity {entity_id} was not added on {added_day}")
        if any(m.added < added_day and m.removed >= added_day for m in intervals if m.removed):
            check.fail("index_events.added", f"entity {entity_id} was a member the day before")

    removed_day = _day(case["removed"]["date"])
    ticker = case["removed"]["ticker"]
    entity_id = check.names_one("index_events.removed", ticker, removed_day)
    if entity_id is None:
        return
    intervals = [m for m in own if m.security.entity_id == entity_id]
    if removed_day not in {m.removed for m in intervals}:
        check.fail("index_events.removed", f"entity {entity_id} was not removed on {removed_day}")
    if any(m.added >= removed_day for m in intervals):
        check.fail("index_events.removed", f"entity {entity_id} comes back after {removed_day}")
    check.names("index_events.removed", ticker, removed_day - dt.timedelta(days=1), {entity_id})
    check.trades("index_events.removed", entity_id, removed_day)
