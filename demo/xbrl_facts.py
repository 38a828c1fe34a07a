"""One issuer's XBRL facts, collected filing by filing and listed in columns (``FactColumns``).

A 10-Q or 10-K reports, for its period and each comparative period, the flows (income and cash
flow, per-share and share figures); at each balance date, the balances; and the shares
outstanding on its cover. Each period's figures are kept once, and each filing points at the
figures as they stood when it was filed (a 10-K/A's restated figures are new figures), so the
facts of an issuer are listed in a few array operations, not built one object at a time: the
large demo has 4.7 million of them.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from findata.demo.documents import FactColumns, period_keys, period_of_key

FLOW_TAGS = (
    "Revenues",
    "CostOfRevenue",
    "GrossProfit",
    "OperatingIncomeLoss",
    "NetIncomeLoss",
    "NetCashProvidedByUsedInOperatingActivities",
)
STOCK_TAGS = (
    "Assets",
    "Liabilities",
    "StockholdersEquity",
    "CashAndCashEquivalentsAtCarryingValue",
)
PER_SHARE_TAGS = ("EarningsPerShareBasic", "EarningsPerShareDiluted")
SHARE_TAGS = ("WeightedAverageNumberOfSharesOutstandingBasic",)
COVER_TAG = "EntityCommonStockSharesOutstanding"
#: the figures of a period, in this order: first those reported for a period (``DURATION``),
#: then those reported at a date (``INSTANT``)
FIGURE_TAGS = (*FLOW_TAGS, *PER_SHARE_TAGS, *SHARE_TAGS, *STOCK_TAGS)
_DURATION = len(FLOW_TAGS) + len(PER_SHARE_TAGS) + len(SHARE_TAGS)
#: every concept a fact can be of: the figures', then the cover's
CONCEPTS: tuple[tuple[str, str, str], ...] = (
    *(
        (
            "us-gaap",
            tag,
            "USD/shares" if tag in PER_SHARE_TAGS else "shares" if tag in SHARE_TAGS else "USD",
        )
        for tag in FIGURE_TAGS
    ),
    ("dei", COVER_TAG, "shares"),
)
#: what a slot of a filing reports: its period's flows, balances at a date, the cover's shares
_FLOWS, _BALANCES, _COVER = 0, 1, 2
_FACTS_PER_SLOT = np.array([_DURATION, len(STOCK_TAGS), 1])
_FIRST_CONCEPT = np.array([0, _DURATION, len(FIGURE_TAGS)])
#: the cover gives the shares outstanding this many days before the filing date
COVER_DAYS_BEFORE_FILING = 10


class ReportingPeriod(Protocol):
    """A quarter or fiscal year (``fundamentals.Period``)."""

    @property
    def start(self) -> dt.date: ...

    @property
    def end(self) -> dt.date: ...


_Filing = tuple[str, int, str, str, dt.date]  # accession, fy, fp, form, filed


@dataclass(frozen=True, eq=False)  # arrays: compared by identity
class IssuerFacts:
    """One issuer's XBRL filings in arrays: each version of a period's figures once (a row of
    ``figures``), and what each filing reports, as slots: a period's flows, the balances at a
    date, or the shares outstanding on its cover. ``columns`` lists the facts."""

    filings: tuple[_Filing, ...]
    figures: np.ndarray  # float64, one row per version of a period's figures, FIGURE_TAGS
    slot_kind: np.ndarray  # int32: _FLOWS, _BALANCES or _COVER
    slot_filing: np.ndarray  # int32: the slot's filing
    slot_figures: np.ndarray  # int32: the row of the figures it reports (0 for a cover)
    slot_start: np.ndarray  # int32: date ordinal of the flows' start; -1 for balances, cover
    slot_end: np.ndarray  # int32: date ordinal of the flows' end, the balance or cover date
    cover_values: np.ndarray  # float64: the cover slots' shares, in order

    def columns(self) -> FactColumns:
        """Every fact, filing by filing (each: flows period by period, balances date by date,
        the cover), frames assigned."""
        kind = self.slot_kind.astype("int64")
        counts = _FACTS_PER_SLOT[kind]
        slot = np.repeat(np.arange(len(kind)), counts)
        within = np.arange(len(slot)) - np.repeat(np.cumsum(counts) - counts, counts)
        concept = _FIRST_CONCEPT[kind][slot] + within
        value = np.empty(len(slot), dtype="float64")
        reported = kind[slot] != _COVER
        value[reported] = self.figures[self.slot_figures[slot[reported]], concept[reported]]
        value[~reported] = self.cover_values
        start = self.slot_start.astype("int64")[slot]
        end = self.slot_end.astype("int64")[slot]
        filing = self.slot_filing.astype("int64")[slot]
        frames, frame = _assign_frames(concept, start, end, filing, self.filings)
        return FactColumns(
            concepts=CONCEPTS,
            filings=self.filings,
            frames=frames,
            concept=concept,
            value=value,
            start=start,
            end=end,
            filing=filing,
            frame=frame,
        )


class IssuerFactsBuilder:
    """Collects one issuer's XBRL filings as they are filed, for ``IssuerFacts``.

    ``set_figures`` gives a period its figures (again, for a restatement: filings made before
    keep the figures they reported); ``add_filing`` records a filing, reporting the figures of
    its periods as they stand."""

    def __init__(self) -> None:
        self._figures: list[list[float]] = []
        self._current: dict[ReportingPeriod, int] = {}
        self._filings: list[_Filing] = []
        # one entry per slot (IssuerFacts)
        self._slot_kind: list[int] = []
        self._slot_filing: list[int] = []
        self._slot_figures: list[int] = []
        self._slot_start: list[int] = []
        self._slot_end: list[int] = []
        self._cover_values: list[float] = []

    def has_figures(self, period: ReportingPeriod) -> bool:
        """The period has figures already."""
        return period in self._current

    def figures(self, period: ReportingPeriod) -> dict[str, float]:
        """The period's figures as they stand, by tag."""
        return dict(zip(FIGURE_TAGS, self._figures[self._current[period]], strict=True))

    def set_figures(self, period: ReportingPeriod, figures: dict[str, float]) -> None:
        """The period's figures from now on (``FIGURE_TAGS`` each)."""
        self._current[period] = len(self._figures)
        self._figures.append([figures[tag] for tag in FIGURE_TAGS])

    def add_filing(
        self,
        *,
        accession: str,
        fy: int,
        fp: str,
        form: str,
        filed: dt.date,
        periods: tuple[ReportingPeriod, ...],
        balance_dates: tuple[tuple[ReportingPeriod, dt.date], ...],
        cover_shares: float | None,
    ) -> None:
        """A filing reporting the flows of ``periods`` (its own, then comparatives), the
        balances of each (period, date) of ``balance_dates`` and, unless None, the shares
        outstanding on its cover."""
        filing = len(self._filings)
        self._filings.append((accession, fy, fp, form, filed))
        for period in periods:
            self._add_slot(_FLOWS, filing, self._current[period], period.start, period.end)
        for period, day in balance_dates:
            self._add_slot(_BALANCES, filing, self._current[period], None, day)
        if cover_shares is not None:
            cover_date = filed - dt.timedelta(days=COVER_DAYS_BEFORE_FILING)
            self._add_slot(_COVER, filing, 0, None, cover_date)
            self._cover_values.append(float(round(cover_shares)))

    def _add_slot(
        self, kind: int, filing: int, figures: int, start: dt.date | None, end: dt.date
    ) -> None:
        self._slot_kind.append(kind)
        self._slot_filing.append(filing)
        self._slot_figures.append(figures)
        self._slot_start.append(-1 if start is None else start.toordinal())
        self._slot_end.append(end.toordinal())

    def build(self) -> IssuerFacts:
        """The filings collected, in arrays."""
        return IssuerFacts(
            filings=tuple(self._filings),
            figures=np.array(self._figures, dtype="float64").reshape(-1, len(FIGURE_TAGS)),
            slot_kind=np.array(self._slot_kind, dtype="int32"),
            slot_filing=np.array(self._slot_filing, dtype="int32"),
            slot_figures=np.array(self._slot_figures, dtype="int32"),
            slot_start=np.array(self._slot_start, dtype="int32"),
            slot_end=np.array(self._slot_end, dtype="int32"),
            cover_values=np.array(self._cover_values, dtype="float64"),
        )


def _assign_frames(
    concept: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    filing: np.ndarray,
    filings: tuple[_Filing, ...],
) -> tuple[tuple[str, ...], np.ndarray]:
    """SEC's frames: each calendar period's frame goes to its latest-filed fact (by filing date,
    then accession; the later fact on a tie) of each concept. Returns the frames and each
    fact's entry of them (-1: none)."""
    frame = np.full(len(concept), -1, dtype="int64")
    if len(concept) == 0:
        return (), frame
    by_order = sorted(range(len(filings)), key=lambda f: (filings[f][4], filings[f][0]))
    filing_rank = np.empty(len(filings), dtype="int64")
    filing_rank[by_order] = np.arange(len(filings))
    order = np.lexsort((np.arange(len(concept)), filing_rank[filing], end, start, concept))
    last = np.ones(len(order), dtype=bool)  # the last fact of its (concept, start, end)
    last[:-1] = (
        (concept[order][1:] != concept[order][:-1])
        | (start[order][1:] != start[order][:-1])
        | (end[order][1:] != end[order][:-1])
    )
    latest = order[last]
    periods, period_of = np.unique(period_keys(start[latest], end[latest]), return_inverse=True)
    names = [calendar_frame(*period_of_key(key)) for key in periods.tolist()]
    frames = tuple(sorted({name for name in names if name is not None}))
    codes = np.array([-1 if name is None else frames.index(name) for name in names])
    frame[latest] = codes[period_of.reshape(-1)]
    return frames, frame


@functools.cache
def calendar_frame(start: int, end: int) -> str | None:
    """SEC's frame of a fact's period (date ordinals; ``start`` -1 for an instant):
    ``CY2023Q1I`` for a quarter-end instant, ``CY2023`` for a year, ``CY2023Q1`` for a
    quarter; None for an instant that ends no quarter."""
    day = dt.date.fromordinal(end)
    quarter = (day.month - 1) // 3 + 1
    if start < 0:
        quarter_end = dt.date(day.year + quarter * 3 // 12, quarter * 3 % 12 + 1, 1)
        if day != quarter_end - dt.timedelta(days=1):
            return None  # cover-page dates are not calendar instants
        return f"CY{day.year}Q{quarter}I"
    if end - start > 300:
        return f"CY{day.year}"
    return f"CY{day.year}Q{quarter}"
