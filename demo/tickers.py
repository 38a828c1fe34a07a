"""Who each ticker names, and when: the demo universe's ticker periods looked up by ticker.

The demo builds some tickers to be shared on purpose (the ambiguous ticker of two companies, the
ticker of both share classes) and a reused one; everything else that names a security by ticker
(index rosters, which publishers key by ticker, and the scenario manifest) must only use a
ticker that names that one security on the dates it is used. This book answers that.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass

from findata.demo.universe import Security, TickerPeriod, Universe


@dataclass(frozen=True)
class _Holder:
    entity_id: int
    period: TickerPeriod

    def covers(self, day: dt.date) -> bool:
        return self.period.valid_from <= day and (
            self.period.valid_to is None or day <= self.period.valid_to
        )

    def overlaps(self, other: TickerPeriod) -> bool:
        """The two periods share at least one day."""
        self_ends_before = self.period.valid_to is not None and self.period.valid_to < (
            other.valid_from
        )
        other_ends_before = other.valid_to is not None and other.valid_to < self.period.valid_from
        return not (self_ends_before or other_ends_before)


class TickerBook:
    """Every ticker period of the universe (securities' and issuers' own), by ticker."""

    def __init__(self, universe: Universe) -> None:
        self._holders: dict[str, list[_Holder]] = defaultdict(list)
        for issuer in universe.issuers:
            for security in issuer.securities:
                for period in security.tickers:
                    self._holders[period.ticker].append(_Holder(security.entity_id, period))
            for period in issuer.issuer_tickers:
                self._holders[period.ticker].append(_Holder(issuer.entity_id, period))

    def named_on(self, ticker: str, day: dt.date) -> set[int]:
        """The entities (securities and issuers) ``ticker`` names on ``day``."""
        return {h.entity_id for h in self._holders.get(ticker, []) if h.covers(day)}

    def names_only(self, ticker: str, day: dt.date, entity_id: int) -> bool:
        """``ticker`` names ``entity_id`` and nothing else on ``day``."""
        return self.named_on(ticker, day) == {entity_id}

    def owns_its_tickers(self, security: Security) -> bool:
        """No own ticker of the security (a ticker its share classes share aside) ever names
        another entity while it names this one: the security can be told by its ticker on any
        day it has one."""
        return all(
            h.entity_id == security.entity_id or not h.overlaps(period)
            for period in security.primary_tickers
            for h in self._holders[period.ticker]
        )
