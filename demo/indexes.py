"""Index rosters over time: sp500, djia and ndx100 with additions and removals.

Rosters start as the largest eligible securities by market value. At each quarterly rebalance
(the first session on or after the 20th of March, June, September and December) the smallest
members may make way for the largest non-members, and a member that stops trading is replaced
on the next session.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from findata.demo.price_history import PriceHistory
from findata.demo.tickers import TickerBook
from findata.demo.universe import Security, Universe

INDEX_NAMES = {"sp500": "S&P 500", "djia": "Dow Jones Industrial Average", "ndx100": "Nasdaq-100"}


@dataclass(frozen=True)
class Membership:
    """``security`` was in ``index`` from ``added`` until ``removed`` (exclusive; None = still)."""

    index: str
    security: Security
    added: dt.date
    removed: dt.date | None


def _rebalance_days(sessions: pd.DatetimeIndex) -> list[dt.date]:
    days = []
    for year in range(sessions[0].year, sessions[-1].year + 1):
        for month in (3, 6, 9, 12):
            position = sessions.searchsorted(pd.Timestamp(year, month, 20))
            if 0 < position < len(sessions):
                days.append(sessions[position].date())
    return days


@dataclass(frozen=True)
class Committee:
    """What the index committee decides beside the rebalances by market value, so that the
    demo's scenarios are in the rosters on any seed and day: ``permanent`` securities are
    members from the first roster on and never removed at a rebalance; on ``day`` ``joining``
    takes the place of ``leaving`` (the plain addition and removal), ``leaving`` being a member
    from the first roster until then and never again, ``joining`` none before and one after."""

    day: dt.date
    leaving: int
    joining: int
    permanent: frozenset[int] = frozenset()

    def kept(self, day: dt.date) -> set[int]:
        """Members a rebalance on ``day`` does not remove."""
        return {*self.permanent, self.leaving if day < self.day else self.joining}

    def barred(self, day: dt.date) -> set[int]:
        """Securities a rebalance on ``day`` does not add."""
        return {self.joining} if day <= self.day else {self.leaving}


def build_index(
    rng: np.random.Generator,
    universe: Universe,
    history: PriceHistory,
    code: str,
    size: int,
    eligible: Callable[[Security], bool],
    changes_per_rebalance: float,
    committee: Committee | None = None,
) -> list[Membership]:
    """The membership intervals of one index."""
    sessions = universe.sessions
    candidates = [s for s in universe.securities if eligible(s)]
    by_id = {s.entity_id: s for s in candidates}
    first = sessions[0].date()

    def kept(day: dt.date) -> set[int]:
        return committee.kept(day) if committee else set()

    def barred(day: dt.date) -> set[int]:
        return committee.barred(day) if committee else set()

    def market_values(day: dt.date) -> dict[int, float]:
        return {k: v for k, v in history.market_values(day).items() if k in by_id}

    values = market_values(first)
    ranked = sorted(
        (k for k in values if k not in barred(first)),
        key=lambda k: (k not in kept(first), -values[k], k),
    )
    members: dict[int, dt.date] = {k: first for k in ranked[:size]}
    intervals: list[Membership] = []

    def next_session(day: dt.date) -> dt.date | None:
        position = sessions.searchsorted(pd.Timestamp(day), side="right")
        return sessions[position].date() if position < len(sessions) else None

    delistings: dict[dt.date, list[int]] = {}
    for security in candidates:
        if security.delisted is not None:
            after = next_session(security.delisted)
            if after is not None:
                delistings.setdefault(after, []).append(security.entity_id)
    rebalances = set(_rebalance_days(sessions))
    decided = {committee.day} if committee else set()
    for day in sorted(rebalances | set(delistings) | decided):
        leaving = [k for k in delistings.get(day, []) if k in members]
        values = market_values(day)
        in_members = sorted(
            (k for k in members if k in values and k not in kept(day)),
            key=lambda k: (values[k], k),
        )
        if day in rebalances:
            count = int(rng.poisson(changes_per_rebalance))
            leaving += [k for k in in_members[:count] if k not in leaving]
        joining = []
        if committee and day == committee.day:
            leaving += [committee.leaving] if committee.leaving not in leaving else []
            joining = [committee.joining]
        for k in leaving:
            intervals.append(Membership(code, by_id[k], members.pop(k), day))
        # a member removed today is not its own replacement (no remove-and-re-add pairs)
        outside = sorted(
            (k for k in values if k not in members and k not in leaving and k not in barred(day)),
            key=lambda k: (-values[k], k),
        )
        for k in [*joining, *outside][: max(size - len(members), len(joining))]:
            members[k] = day
    for k, added in members.items():
        intervals.append(Membership(code, by_id[k], added, None))
    intervals.sort(key=lambda m: (m.added, m.security.entity_id))
    return intervals


def sp500_committee(universe: Universe) -> Committee:
    """The scenarios' sp500 decisions: the renamed company is a member all along (rosters show
    its ticker change), and the two companies built for the index events (``index_swap``)
    change places on the rebalance day two thirds of the way through the history."""
    leaving, joining = universe.special["index_swap"]
    renamed = universe.special["renamed"][2]
    rebalances = _rebalance_days(universe.sessions)
    return Committee(
        rebalances[len(rebalances) * 2 // 3],
        leaving.entity_id,
        joining.entity_id,
        permanent=frozenset({renamed.entity_id}),
    )


def build_indexes(
    rng: np.random.Generator,
    universe: Universe,
    history: PriceHistory,
    sp500: int,
    djia: int,
    ndx100: int,
) -> list[Membership]:
    """Every index's membership intervals.

    Publishers key rosters by ticker (the landing file's key is index, ticker and date added),
    so only a security that owns its tickers can be a member: under a ticker that names another
    security at the same time (the demo's ambiguous ticker), a roster row could not say which
    one is meant, and two such members added on one day would be one key twice.
    """
    book = TickerBook(universe)

    def on_nasdaq(security: Security) -> bool:
        return security.exchange == "XNAS" and book.owns_its_tickers(security)

    committee = sp500_committee(universe)
    return [
        *build_index(rng, universe, history, "sp500", sp500, book.owns_its_tickers, 1.5, committee),
        *build_index(rng, universe, history, "djia", djia, book.owns_its_tickers, 0.15),
        *build_index(rng, universe, history, "ndx100", ndx100, on_nasdaq, 1.0),
    ]
