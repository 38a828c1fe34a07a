"""The demo's daily bars held as columns, and the lookups the later generation stages make.

Every security's bars are one slice of each column: security ``k`` (in the universe's order)
trades on the sessions ``first_session[k]`` onwards, one bar each, in rows
``offsets[k]:offsets[k + 1]``. Held so, the large demo's 13.6 million bars take ~700 MB; as a
pandas frame with per-security and per-date indexes on it they took more than twice that.
"""

from __future__ import annotations

import bisect
import datetime as dt
from dataclasses import dataclass

import numpy as np
import pandas as pd

from findata.demo.universe import Security

#: the bar columns, each one value per row (``PriceHistory.columns``)
BAR_COLUMNS = {
    "open": "float64",
    "high": "float64",
    "low": "float64",
    "close": "float64",
    "volume": "int64",
    "shares_outstanding": "int64",
}


@dataclass(frozen=True)
class CorporateAction:
    """A split (``ratio`` new shares per old share) or a cash dividend (``amount`` USD/share)."""

    security: Security
    action: str
    ex_date: dt.date
    announced: dt.date
    ratio: float | None = None
    amount: float | None = None


@dataclass(frozen=True)
class _Span:
    """Where one security's bars are: its first session's position and its rows."""

    first_session: int
    first_row: int
    bars: int


@dataclass(eq=False)  # arrays: compared by identity
class PriceHistory:
    """Every price bar and corporate action of the universe, bars in columns (module doc)."""

    sessions: pd.DatetimeIndex
    entity_ids: np.ndarray  # int64, one per security
    first_session: np.ndarray  # int64, one per security
    offsets: np.ndarray  # int64, one per security and one more: the end of the last
    columns: dict[str, np.ndarray]  # BAR_COLUMNS, one value per row
    ticker_codes: np.ndarray  # int32 per row: the row's ticker in ``tickers``, -1 for none
    tickers: tuple[str, ...]
    actions: list[CorporateAction]

    def __post_init__(self) -> None:
        # plain Python values for the per-call lookups (numpy scalars cost more per call)
        self._ordinals = [d.toordinal() for d in self.sessions.date]
        starts, stops = self.offsets[:-1].tolist(), self.offsets[1:].tolist()
        self._spans = {
            entity_id: _Span(first, start, stop - start)
            for entity_id, first, start, stop in zip(
                self.entity_ids.tolist(), self.first_session.tolist(), starts, stops, strict=True
            )
            if stop > start
        }

    @property
    def close(self) -> np.ndarray:
        return self.columns["close"]

    @property
    def shares_outstanding(self) -> np.ndarray:
        return self.columns["shares_outstanding"]

    def _last_row(self, entity_id: int, day: dt.date) -> int | None:
        """The row of the security's last bar on or before ``day`` (None when before the first
        or without bars)."""
        span = self._spans.get(entity_id)
        if span is None:
            return None
        bar = bisect.bisect_right(self._ordinals, day.toordinal()) - 1 - span.first_session
        if bar < 0:
            return None
        return span.first_row + min(bar, span.bars - 1)

    def market_values(self, day: dt.date) -> dict[int, float]:
        """Close times shares outstanding of every security that traded on ``day``."""
        position = bisect.bisect_left(self._ordinals, day.toordinal())
        if position == len(self._ordinals) or self._ordinals[position] != day.toordinal():
            return {}
        bar = position - self.first_session
        traded = (bar >= 0) & (bar < np.diff(self.offsets))
        rows = self.offsets[:-1][traded] + bar[traded]
        value = self.close[rows] * self.shares_outstanding[rows]
        return dict(zip(self.entity_ids[traded].tolist(), value.tolist(), strict=True))

    def closes_on(self, day: dt.date) -> dict[int, float]:
        """``close_on(entity_id, day)`` of every security that has one, all at once."""
        since_first = bisect.bisect_right(self._ordinals, day.toordinal()) - 1 - self.first_session
        bars = np.diff(self.offsets)
        has = (since_first >= 0) & (bars > 0)
        rows = self.offsets[:-1][has] + np.minimum(since_first, bars - 1)[has]
        return dict(zip(self.entity_ids[has].tolist(), self.close[rows].tolist(), strict=True))

    def close_on(self, entity_id: int, day: dt.date) -> float | None:
        """The security's close on the last session on or before ``day``."""
        row = self._last_row(entity_id, day)
        return None if row is None else float(self.close[row])

    def traded_on(self, entity_id: int, day: dt.date) -> bool:
        """The security has a bar on ``day``."""
        span = self._spans.get(entity_id)
        if span is None:
            return False
        position = bisect.bisect_left(self._ordinals, day.toordinal())
        bar = position - span.first_session
        return (
            0 <= bar < span.bars
            and position < len(self._ordinals)
            and self._ordinals[position] == day.toordinal()
        )

    def first_bar(self, entity_id: int) -> dt.date | None:
        """The date of the security's first bar (None without prices)."""
        span = self._spans.get(entity_id)
        return None if span is None else self._session_date(span.first_session)

    def last_bar(self, entity_id: int) -> dt.date | None:
        """The date of the security's last bar (None without prices)."""
        span = self._spans.get(entity_id)
        return None if span is None else self._session_date(span.first_session + span.bars - 1)

    def shares_on(self, entity_id: int, day: dt.date) -> float | None:
        """Shares outstanding on the last session on or before ``day`` (the first session's
        count when ``day`` comes before it; None without prices)."""
        span = self._spans.get(entity_id)
        if span is None:
            return None
        row = self._last_row(entity_id, day)
        return float(self.shares_outstanding[span.first_row if row is None else row])

    def total_shares_on(self, entity_ids: list[int], day: dt.date) -> float:
        """``shares_on`` of each security added up in order (0 when none has prices)."""
        position = bisect.bisect_right(self._ordinals, day.toordinal()) - 1
        total = 0
        for entity_id in entity_ids:
            span = self._spans.get(entity_id)
            if span is not None:
                bar = min(max(position - span.first_session, 0), span.bars - 1)
                total += float(self.shares_outstanding[span.first_row + bar])
        return total

    def _session_date(self, position: int) -> dt.date:
        return dt.date.fromordinal(self._ordinals[position])

    def rows_between(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The bars on sessions ``start:stop`` in (entity_id, date) order, as three arrays: each
        bar's security (its position in ``entity_ids``), its row and its session's position."""
        order = np.argsort(self.entity_ids, kind="stable")
        first = self.first_session[order]
        bars = np.diff(self.offsets)[order]
        begin = np.maximum(first, start)
        end = np.minimum(first + bars, stop)
        present = end > begin
        order, first, begin, end = order[present], first[present], begin[present], end[present]
        counts = end - begin
        # each security's run of rows: its first row plus 0, 1, 2, ... within the run
        within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        securities = np.repeat(order, counts)
        sessions = np.repeat(begin, counts) + within
        rows = np.repeat(self.offsets[order] + (begin - first), counts) + within
        return securities, rows, sessions
