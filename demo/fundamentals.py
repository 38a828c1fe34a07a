"""Quarterly and annual filings (10-Q, 10-K, 10-K/A) as XBRL facts, the way companyfacts lists them.

Every issuer reports calendar fiscal years. A 10-Q reports its quarter and, as comparatives, the
same quarter a year earlier and the last year-end balance sheet; a 10-K reports the year and the
year before. One issuer files a 10-K/A restating an earlier year, and the next 10-K's comparatives
carry the restated figures: the same period then has two values known from two dates.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from findata.demo.documents import FactColumns, FilingIndexEntry
from findata.demo.price_history import PriceHistory
from findata.demo.universe import Issuer, Universe
from findata.demo.xbrl_facts import IssuerFacts, IssuerFactsBuilder

# first fiscal year with XBRL financial data for every filer (SEC's phase-in ended in 2011)
FIRST_XBRL_YEAR = 2011
#: days from a period's end to its filing: 10-K, 10-Q (numpy's upper bounds are exclusive)
ANNUAL_LAG_DAYS = (55, 75)
QUARTERLY_LAG_DAYS = (30, 45)

LABELS: dict[str, tuple[str, str]] = {
    "Revenues": ("Revenues", "Amount of revenue recognized from goods sold and services rendered."),
    "CostOfRevenue": ("Cost of Revenue", "Cost of product sold and service rendered."),
    "GrossProfit": ("Gross Profit", "Revenue less cost of revenue."),
    "OperatingIncomeLoss": ("Operating Income (Loss)", "Net result of operating activities."),
    "NetIncomeLoss": ("Net Income (Loss) Attributable to Parent", "Profit or loss for the period."),
    "NetCashProvidedByUsedInOperatingActivities": (
        "Net Cash Provided by (Used in) Operating Activities",
        "Cash flow from operations.",
    ),
    "Assets": ("Assets", "Sum of the carrying amounts of all assets."),
    "Liabilities": ("Liabilities", "Sum of the carrying amounts of all liabilities."),
    "StockholdersEquity": ("Stockholders' Equity Attributable to Parent", "Total equity."),
    "CashAndCashEquivalentsAtCarryingValue": (
        "Cash and Cash Equivalents, at Carrying Value",
        "Cash and short-term, highly liquid investments.",
    ),
    "EarningsPerShareBasic": ("Earnings Per Share, Basic", "Net income per basic share."),
    "EarningsPerShareDiluted": ("Earnings Per Share, Diluted", "Net income per diluted share."),
    "WeightedAverageNumberOfSharesOutstandingBasic": (
        "Weighted Average Number of Shares Outstanding, Basic",
        "Average basic shares.",
    ),
    "EntityCommonStockSharesOutstanding": (
        "Entity Common Stock, Shares Outstanding",
        "Shares outstanding on the cover date.",
    ),
}


@dataclass(frozen=True)
class Period:
    """A reporting period: a quarter (``quarter`` 1-4) or a fiscal year (``quarter`` None)."""

    year: int
    quarter: int | None
    # set once from year and quarter (read hundreds of thousands of times on the large demo)
    start: dt.date = field(init=False, compare=False, repr=False)
    end: dt.date = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        month = 12 if self.quarter is None else 3 * self.quarter
        start = dt.date(self.year, 1 if self.quarter is None else month - 2, 1)
        end = dt.date(self.year + month // 12, month % 12 + 1, 1) - dt.timedelta(days=1)
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "end", end)

    @property
    def frame(self) -> str:
        return f"CY{self.year}" if self.quarter is None else f"CY{self.year}Q{self.quarter}"

    def previous_year(self) -> Period:
        return Period.of(self.year - 1, self.quarter)

    @staticmethod
    @functools.cache
    def of(year: int, quarter: int | None) -> Period:
        """The period of ``year`` and ``quarter``, one instance each (the filings of the large
        demo ask for periods hundreds of thousands of times)."""
        return Period(year, quarter)


@dataclass
class IssuerFilings:
    """What one issuer filed: its XBRL filings (their facts listed on demand, ``facts``) and
    the index entries of its filings."""

    xbrl: IssuerFacts
    index: list[FilingIndexEntry] = field(default_factory=list)
    restatement: tuple[dt.date, dt.date, dt.date] | None = None  # (period_end, first, restated)

    @property
    def facts(self) -> FactColumns:
        """Every fact of the issuer's filings in filing order, frames assigned."""
        return self.xbrl.columns()


class AccessionCounter:
    """Accession numbers ``<filer cik>-<yy>-<sequence>``, unique per filer and year."""

    def __init__(self) -> None:
        self._next: dict[tuple[str, int], int] = defaultdict(int)

    def next(self, filer_cik: str, filed: dt.date) -> str:
        key = (filer_cik, filed.year)
        self._next[key] += 1
        return f"{filer_cik.zfill(10)}-{filed.year % 100:02d}-{self._next[key]:06d}"


def _period_values(
    rng: np.random.Generator,
    base_revenue: float,
    margins: dict[str, float],
    period: Period,
    shares: float,
) -> dict[str, float]:
    """One period's figures; quarters are a quarter of the year with a seasonal wobble."""
    years = period.year - FIRST_XBRL_YEAR
    revenue = base_revenue * (1 + margins["growth"]) ** years
    if period.quarter is not None:
        revenue = revenue / 4 * (1 + 0.06 * math.sin(period.quarter))
    revenue = round(revenue * float(rng.uniform(0.97, 1.03)), -3)
    cost = round(revenue * (1 - margins["gross"]), -3)
    operating = round(revenue * margins["operating"], -3)
    net = round(revenue * margins["net"], -3)
    assets = round(base_revenue * margins["asset_turn"] * (1 + margins["growth"]) ** years, -3)
    liabilities = round(assets * margins["leverage"], -3)
    eps = round(net / shares, 2) if shares else 0.0
    return {
        "Revenues": revenue,
        "CostOfRevenue": cost,
        "GrossProfit": revenue - cost,
        "OperatingIncomeLoss": operating,
        "NetIncomeLoss": net,
        "NetCashProvidedByUsedInOperatingActivities": round(net * 1.2 + revenue * 0.03, -3),
        "Assets": assets,
        "Liabilities": liabilities,
        "StockholdersEquity": assets - liabilities,
        "CashAndCashEquivalentsAtCarryingValue": round(assets * 0.11, -3),
        "EarningsPerShareBasic": eps,
        "EarningsPerShareDiluted": round(eps * 0.98, 2),
        "WeightedAverageNumberOfSharesOutstandingBasic": round(shares),
    }


def build_issuer_filings(
    rng: np.random.Generator,
    issuer: Issuer,
    history: PriceHistory,
    as_of: dt.date,
    accessions: AccessionCounter,
    restate: bool,
) -> IssuerFilings:
    """Every 10-Q and 10-K the issuer filed up to ``as_of`` (and a 10-K/A when ``restate``)."""
    entity_ids = [s.entity_id for s in issuer.securities]

    def shares_on(day: dt.date) -> float:
        """Shares outstanding of all the issuer's listed classes on ``day`` (last known)."""
        return history.total_shares_on(entity_ids, day)

    listed = min(s.listed for s in issuer.securities)
    first_year = max(FIRST_XBRL_YEAR, listed.year)
    shares0 = shares_on(dt.date(first_year, 6, 30)) or 1e8
    price0 = history.close_on(issuer.securities[0].entity_id, dt.date(first_year, 6, 30)) or 20.0
    base_revenue = shares0 * price0 / float(rng.uniform(1.5, 6.0))
    gross = float(rng.uniform(0.25, 0.7))
    margins = {
        "growth": float(rng.normal(0.05, 0.06)),
        "gross": gross,
        "operating": gross * float(rng.uniform(0.15, 0.5)),
        "net": gross * float(rng.uniform(-0.1, 0.35)),
        "asset_turn": float(rng.uniform(0.8, 3.0)),
        "leverage": float(rng.uniform(0.3, 0.75)),
    }
    multi_class = len({s.share_class for s in issuer.securities}) > 1
    facts = IssuerFactsBuilder()
    index: list[FilingIndexEntry] = []
    restatement: tuple[dt.date, dt.date, dt.date] | None = None

    def figures(period: Period) -> None:
        if not facts.has_figures(period):
            shares = shares_on(period.end)
            facts.set_figures(period, _period_values(rng, base_revenue, margins, period, shares))

    # a company whose stock left the exchange may go on filing (issuer-level data stays)
    filing_until = (
        as_of if issuer.issuer_tickers else max((s.delisted or as_of) for s in issuer.securities)
    )
    restated_year = restated_year_on(as_of) if restate else None
    for year in range(first_year, as_of.year + 1):
        for quarter in (1, 2, 3, None):
            period = Period.of(year, quarter)
            lag = int(rng.integers(*ANNUAL_LAG_DAYS if quarter is None else QUARTERLY_LAG_DAYS))
            filed = period.end + dt.timedelta(days=lag)
            if filed > as_of or period.end > filing_until:
                continue
            for p in (period, period.previous_year()):
                figures(p)
            prior_year_end = Period.of(year - 1, None)
            figures(prior_year_end)
            form = "10-K" if quarter is None else "10-Q"
            accession = accessions.next(issuer.cik, filed)
            facts.add_filing(
                accession=accession,
                fy=year,
                fp=_fiscal_period(period),
                form=form,
                filed=filed,
                periods=(period, period.previous_year()),
                balance_dates=((period, period.end), (prior_year_end, prior_year_end.end)),
                cover_shares=None if multi_class else shares_on(filed),
            )
            index.append(_index_entry(issuer, accession, filed, period.end, form))
            if quarter is None and year == restated_year:
                restated_filed = filed + dt.timedelta(days=int(rng.integers(100, 130)))
                if restated_filed <= as_of:
                    facts.set_figures(period, _restated(facts.figures(period)))
                    amended = accessions.next(issuer.cik, restated_filed)
                    facts.add_filing(
                        accession=amended,
                        fy=year,
                        fp=_fiscal_period(period),
                        form="10-K/A",
                        filed=restated_filed,
                        periods=(period,),
                        balance_dates=((period, period.end),),
                        cover_shares=None,
                    )
                    index.append(
                        _index_entry(issuer, amended, restated_filed, period.end, "10-K/A")
                    )
                    restatement = (period.end, filed, restated_filed)
    return IssuerFilings(facts.build(), index, restatement)


def _fiscal_period(period: Period) -> str:
    """A filing's ``fp``: ``FY`` for a year, ``Q1``-``Q3`` for a quarter."""
    return "FY" if period.quarter is None else f"Q{period.quarter}"


def restated_year_on(as_of: dt.date) -> int:
    """The fiscal year the restating issuer restates: the latest whose next 10-K, which repeats
    its figures as comparatives, is filed by ``as_of`` whatever lag is drawn; so the restated
    year is reported by three filings (its 10-K, its 10-K/A, the next 10-K) on any day."""
    latest_next_10k = dt.date(as_of.year - 1, 12, 31) + dt.timedelta(days=ANNUAL_LAG_DAYS[1] - 1)
    return as_of.year - 2 if latest_next_10k <= as_of else as_of.year - 3


def _restated(figures: dict[str, float]) -> dict[str, float]:
    """The year's figures with revenue and income a few percent lower (an accounting
    correction)."""
    figures = dict(figures)
    for tag, factor in (
        ("Revenues", 0.96),
        ("GrossProfit", 0.94),
        ("OperatingIncomeLoss", 0.9),
        ("NetIncomeLoss", 0.88),
    ):
        figures[tag] = round(figures[tag] * factor, -3)
    figures["CostOfRevenue"] = figures["Revenues"] - figures["GrossProfit"]
    shares = figures["WeightedAverageNumberOfSharesOutstandingBasic"]
    figures["EarningsPerShareBasic"] = round(figures["NetIncomeLoss"] / shares, 2)
    figures["EarningsPerShareDiluted"] = round(figures["EarningsPerShareBasic"] * 0.98, 2)
    return figures


def _index_entry(
    issuer: Issuer, accession: str, filed: dt.date, report: dt.date, form: str
) -> FilingIndexEntry:
    stem = issuer.securities[0].tickers[-1].ticker.lower().replace("-", "")
    kind = {"10-K": "10-K", "10-Q": "10-Q", "10-K/A": "10-K/A"}[form]
    return FilingIndexEntry(
        accession=accession,
        filing_date=filed,
        report_date=report,
        form=form,
        primary_document=f"{stem}-{report:%Y%m%d}.htm",
        primary_doc_description=kind,
        size=1_200_000 + (int(accession[-6:]) * 7919) % 900_000,
        is_xbrl=True,
    )


def filings_of_universe(
    rng: np.random.Generator,
    universe: Universe,
    history: PriceHistory,
    accessions: AccessionCounter,
    restating_issuer: Issuer,
) -> dict[int, IssuerFilings]:
    """Every issuer's 10-Q/10-K filings, keyed by issuer entity_id."""
    return {
        issuer.entity_id: build_issuer_filings(
            rng, issuer, history, universe.as_of, accessions, restate=issuer is restating_issuer
        )
        for issuer in universe.issuers
    }
