"""13F-HR filings of institutional managers, one per manager and quarter, and two amendments.

A manager keeps most of its book from quarter to quarter and turns a tenth of it over; values
are shares times the quarter-end close. Information tables are in XML since the 2013 second
quarter, so the filings start there at the earliest. The first manager amends two reports
(``add_amendments``): a RESTATEMENT 13F-HR/A that replaces one quarter's whole report (a share
count corrected, a position dropped), and a NEW HOLDINGS 13F-HR/A that adds positions left out of
another quarter's report.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass, replace

import numpy as np

from findata.demo.documents import Address, Filing13F, Holding13F
from findata.demo.fundamentals import AccessionCounter, Period
from findata.demo.price_history import PriceHistory
from findata.demo.universe import Security, Universe

MANAGER_CIK_BASE = 1_960_000
#: days from an original 13F-HR to its amendment (numpy's upper bound is exclusive)
AMENDMENT_LAG_DAYS = (15, 45)
FIRST_XML_QUARTER_END = dt.date(2013, 6, 30)
_MANAGER_WORDS = (
    "Harbor",
    "Ridgeline",
    "Oak Hill",
    "Bluewater",
    "Stonebridge",
    "Lighthouse",
    "Copper Creek",
    "Silverleaf",
    "Northstar",
    "Granite Peak",
    "Mariner",
    "Elmwood",
    "Westbrook",
    "Highland",
    "Clearwater",
    "Foxhall",
    "Kingsley",
    "Larchmont",
)
# "Capital" is in every other name so that a manager search finds several
_MANAGER_KINDS = (
    "Capital Management LLC",
    "Asset Management LP",
    "Capital Partners LP",
    "Investment Advisors Inc",
    "Capital Advisors LLC",
    "Wealth Management LLC",
)


@dataclass(frozen=True)
class Manager:
    """An institutional investment manager filing 13F-HR."""

    cik: str
    name: str
    address: Address
    signer: str

    @property
    def manager_id(self) -> int:
        """The manager's id in the API: its CIK as a number."""
        return int(self.cik)


def build_managers(rng: np.random.Generator, count: int) -> list[Manager]:
    """``count`` managers with distinct names."""
    managers = []
    for k in range(count):
        name = (
            f"{_MANAGER_WORDS[k % len(_MANAGER_WORDS)]} {_MANAGER_KINDS[k % len(_MANAGER_KINDS)]}"
        )
        if k >= len(_MANAGER_WORDS):
            name = (
                f"{_MANAGER_WORDS[k % len(_MANAGER_WORDS)]} {k // len(_MANAGER_WORDS) + 1} "
                f"{_MANAGER_KINDS[k % len(_MANAGER_KINDS)]}"
            )
        managers.append(
            Manager(
                cik=str(MANAGER_CIK_BASE + 13 * k + int(rng.integers(13))).zfill(10),
                name=name,
                address=Address(f"{200 + k} PARK AVENUE", "NEW YORK", "NY", "10166"),
                signer=f"Compliance Officer {k + 1}",
            )
        )
    return managers


def quarter_ends(first: dt.date, last: dt.date) -> list[dt.date]:
    """Calendar quarter ends from ``first`` to ``last`` (inclusive)."""
    ends = []
    year, quarter = first.year, (first.month - 1) // 3 + 1
    while True:
        end = Period(year, quarter).end
        if end > last:
            return ends
        if end >= first:
            ends.append(end)
        year, quarter = (year + 1, 1) if quarter == 4 else (year, quarter + 1)


@functools.cache
def _filer_name(name: str) -> str:
    """A company's name as 13F filers write it (upper case); one string per name, shared by
    every row that names the company (hundreds of thousands on the large demo)."""
    return name.upper()


def _listed_on(security: Security, day: dt.date) -> bool:
    return security.listed <= day and (security.delisted is None or day <= security.delisted)


@dataclass(frozen=True)
class _Quarter:
    """A quarter end, the securities listed on it (by entity_id, in the universe's order) and
    their closes (``PriceHistory.close_on``)."""

    end: dt.date
    listed: dict[int, Security]
    closes: dict[int, float]

    @classmethod
    def of(cls, universe: Universe, history: PriceHistory, end: dt.date) -> _Quarter:
        listed = {s.entity_id: s for s in universe.securities if _listed_on(s, end)}
        return cls(end, listed, history.closes_on(end))


def build_13f_filings(
    rng: np.random.Generator,
    universe: Universe,
    history: PriceHistory,
    managers: list[Manager],
    book_size: int,
    always_held: Security,
    accessions: AccessionCounter,
) -> list[Filing13F]:
    """Each manager's 13F-HR for every quarter whose filing falls on or before ``as_of``;
    the first manager holds ``always_held`` in every quarter."""
    as_of = universe.as_of
    first = max(FIRST_XML_QUARTER_END, universe.sessions[0].date())
    # what every manager looks up each quarter, found once per quarter
    quarters = [
        _Quarter.of(universe, history, quarter_end) for quarter_end in quarter_ends(first, as_of)
    ]
    filings: list[Filing13F] = []
    for number, manager in enumerate(managers):
        book: dict[int, float] = {}  # entity_id -> shares
        for quarter in quarters:
            quarter_end, by_id = quarter.end, quarter.listed
            filed = quarter_end + dt.timedelta(days=int(rng.integers(30, 46)))
            if filed > as_of:
                break
            book = {k: v for k, v in book.items() if k in by_id}
            turnover = [k for k in book if rng.random() < 0.1]
            for k in turnover:
                del book[k]
            candidates = [k for k in by_id if k not in book]
            wanted = min(book_size, len(by_id)) - len(book)
            if wanted > 0 and candidates:
                for k in rng.choice(candidates, size=min(wanted, len(candidates)), replace=False):
                    book[int(k)] = 0.0
            if number == 0 and always_held.entity_id in by_id:
                book.setdefault(always_held.entity_id, 0.0)
            holdings = []
            for entity_id in sorted(book):
                security = by_id[entity_id]
                close = quarter.closes.get(entity_id)
                if close is None:
                    continue
                if book[entity_id] == 0.0:
                    book[entity_id] = float(rng.integers(1, 400)) * 1000 * (1 + 30 / close)
                book[entity_id] = round(book[entity_id] * float(rng.uniform(0.9, 1.12)))
                shares = int(book[entity_id])
                discretion = "SOLE" if rng.random() < 0.85 else "DFND"
                holdings.append(
                    Holding13F(
                        name_of_issuer=_filer_name(security.issuer.name_on(quarter_end)),
                        title_of_class=f"CL {security.share_class}"
                        if security.share_class
                        else "COM",
                        cusip=security.cusip,
                        value_usd=round(shares * close),
                        shares=shares,
                        investment_discretion=discretion,
                        voting_sole=shares if discretion == "SOLE" else 0,
                        voting_shared=0 if discretion == "SOLE" else shares,
                    )
                )
                if rng.random() < 0.04:  # an options position on the same security
                    contracts = int(rng.integers(1, 50)) * 100
                    side = "Call" if rng.random() < 0.5 else "Put"
                    holdings.append(
                        Holding13F(
                            name_of_issuer=_filer_name(security.issuer.name_on(quarter_end)),
                            title_of_class=side.upper(),
                            cusip=security.cusip,
                            value_usd=round(contracts * close),
                            shares=contracts,
                            put_call=side,
                            voting_none=contracts,
                        )
                    )
            filings.append(
                Filing13F(
                    accession=accessions.next(manager.cik, filed),
                    filed=filed,
                    period=quarter_end,
                    manager_cik=manager.cik,
                    manager_name=manager.name,
                    manager_address=manager.address,
                    signer_name=manager.signer,
                    holdings=tuple(holdings),
                )
            )
    return filings


@dataclass(frozen=True)
class Amendments:
    """The two 13F-HR/A of the scenario manager and what each changes."""

    restated: Filing13F  # the original that the restatement replaces
    restatement: Filing13F
    corrected_cusip: str  # a position whose shares the restatement corrects
    dropped_cusip: str  # a position the restatement leaves out
    added_to: Filing13F  # the original that the new-holdings amendment adds to
    new_holdings: Filing13F


def add_amendments(
    rng: np.random.Generator,
    universe: Universe,
    history: PriceHistory,
    filings: list[Filing13F],
    manager: Manager,
    keep: Security,
    accessions: AccessionCounter,
) -> tuple[list[Filing13F], Amendments]:
    """``filings`` with a RESTATEMENT and a NEW HOLDINGS 13F-HR/A of ``manager``, each filed
    weeks after the original it amends and by ``as_of``: the latest two quarters whose
    amendment fits before ``as_of`` (the later one restated). ``keep``'s position (the holdings
    scenario's) is neither corrected nor dropped."""
    as_of = universe.as_of
    latest_fit = as_of - dt.timedelta(days=AMENDMENT_LAG_DAYS[1] - 1)
    own = [f for f in filings if f.manager_cik == manager.cik and f.filed <= latest_fit]
    if len(own) < 2:
        raise ValueError(f"{manager.name} has no two 13F-HR to amend by {as_of}")
    added_to, restated = own[-2], own[-1]

    shares_rows = [h for h in restated.holdings if h.put_call is None and h.cusip != keep.cusip]
    if len(shares_rows) < 2:
        raise ValueError(f"{restated.accession} has too few positions to restate")
    picks = rng.choice(len(shares_rows), size=2, replace=False)
    corrected, dropped = shares_rows[int(picks[0])], shares_rows[int(picks[1])]
    restatement = _amendment(
        rng,
        restated,
        accessions,
        "RESTATEMENT",
        tuple(
            _with_shares(h, round(h.shares * 1.1), history, _by_cusip(universe), restated.period)
            if h is corrected
            else h
            for h in restated.holdings
            if h is not dropped
        ),
    )

    held = {h.cusip for h in added_to.holdings}
    candidates = [
        s
        for s in universe.securities
        if s.cusip not in held
        and _listed_on(s, added_to.period)
        and history.close_on(s.entity_id, added_to.period) is not None
    ]
    if not candidates:
        raise ValueError(f"no security outside {added_to.accession} to add")
    chosen = rng.choice(len(candidates), size=min(2, len(candidates)), replace=False)
    added = tuple(
        _position(rng, candidates[int(k)], history, added_to.period) for k in sorted(chosen)
    )
    new_holdings = _amendment(rng, added_to, accessions, "NEW HOLDINGS", added)
    amended = sorted(
        [*filings, restatement, new_holdings], key=lambda f: (f.manager_cik, f.period, f.filed)
    )
    return amended, Amendments(
        restated, restatement, corrected.cusip, dropped.cusip, added_to, new_holdings
    )


def _amendment(
    rng: np.random.Generator,
    original: Filing13F,
    accessions: AccessionCounter,
    kind: str,
    holdings: tuple[Holding13F, ...],
) -> Filing13F:
    filed = original.filed + dt.timedelta(days=int(rng.integers(*AMENDMENT_LAG_DAYS)))
    return replace(
        original,
        accession=accessions.next(original.manager_cik, filed),
        filed=filed,
        holdings=holdings,
        amendment_number=1,
        amendment_type=kind,
    )


def _by_cusip(universe: Universe) -> dict[str, Security]:
    return {s.cusip: s for s in universe.securities}


def _with_shares(
    holding: Holding13F,
    shares: int,
    history: PriceHistory,
    securities: dict[str, Security],
    period: dt.date,
) -> Holding13F:
    """The position with another share count (value and voting authority follow it)."""
    close = history.close_on(securities[holding.cusip].entity_id, period)
    assert close is not None
    sole = holding.investment_discretion == "SOLE"
    return replace(
        holding,
        shares=shares,
        value_usd=round(shares * close),
        voting_sole=shares if sole else 0,
        voting_shared=0 if sole else shares,
    )


def _position(
    rng: np.random.Generator, security: Security, history: PriceHistory, period: dt.date
) -> Holding13F:
    """A new share position in ``security`` at ``period``'s close."""
    close = history.close_on(security.entity_id, period)
    assert close is not None
    shares = int(rng.integers(1, 200)) * 1000
    return Holding13F(
        name_of_issuer=security.issuer.name_on(period).upper(),
        title_of_class=f"CL {security.share_class}" if security.share_class else "COM",
        cusip=security.cusip,
        value_usd=round(shares * close),
        shares=shares,
        voting_sole=shares,
    )
