"""Form 4 filings by each insider issuer's officers and directors.

Insiders sell on the market, buy now and then, receive awards, and exercise options (a
derivative line disposing of the options beside a non-derivative line acquiring the shares).
One filing of the scenario issuer is amended by a 4/A that corrects a share count.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace

import numpy as np

from findata.dates import years_before
from findata.demo.documents import (
    Address,
    DerivativeLine,
    Form4Filing,
    NonDerivativeLine,
    ReportingOwner,
)
from findata.demo.fundamentals import AccessionCounter
from findata.demo.price_history import PriceHistory
from findata.demo.universe import Issuer, Universe

INSIDER_CIK_BASE = 1_950_000
_FIRST = [
    "JOHN",
    "MARY",
    "ROBERT",
    "PATRICIA",
    "MICHAEL",
    "LINDA",
    "DAVID",
    "ELIZABETH",
    "JAMES",
    "SUSAN",
    "RICHARD",
    "KAREN",
    "THOMAS",
    "NANCY",
    "DANIEL",
    "LISA",
    "MARK",
    "SANDRA",
    "PAUL",
    "ANGELA",
]
_LAST = [
    "SMITH",
    "JOHNSON",
    "WILLIAMS",
    "BROWN",
    "JONES",
    "GARCIA",
    "MILLER",
    "DAVIS",
    "RODRIGUEZ",
    "MARTINEZ",
    "HERNANDEZ",
    "LOPEZ",
    "WILSON",
    "ANDERSON",
    "TAYLOR",
    "THOMAS",
    "MOORE",
    "JACKSON",
    "MARTIN",
    "LEE",
]
_TITLES = (
    "Chief Executive Officer",
    "Chief Financial Officer",
    "Chief Operating Officer",
    "General Counsel",
    "Chief Technology Officer",
)
_FOOTNOTE_WAP = (
    "The price reported is a weighted average price. These shares were sold in "
    "multiple transactions at prices ranging from ${low} to ${high}, inclusive."
)
_FOOTNOTE_PLAN = (
    "The sales reported on this Form 4 were effected pursuant to a Rule 10b5-1 "
    "trading plan adopted by the reporting person."
)
_FOOTNOTE_OPTION = (
    "The option vested in four equal annual installments beginning on the first "
    "anniversary of the grant date."
)


@dataclass
class _Insider:
    owner: ReportingOwner
    shares: float
    options: float
    strike: float


def _business_days_after(day: dt.date, count: int) -> dt.date:
    while count:
        day += dt.timedelta(days=1)
        if day.weekday() < 5:
            count -= 1
    return day


def _insiders_of(
    rng: np.random.Generator, issuer: Issuer, start_price: float, number: int
) -> list[_Insider]:
    city, state, zip_code = issuer.city
    insiders = []
    for k in range(number):
        officer = k < 3
        owner = ReportingOwner(
            cik=str(INSIDER_CIK_BASE + issuer.entity_id % 100_000 * 10 + k).zfill(10),
            name=f"{rng.choice(_LAST)} {rng.choice(_FIRST)}",
            address=Address(
                f"{100 + k} {issuer.name.split()[0].upper()} WAY", city, state, zip_code
            ),
            is_director=not officer or k == 0,
            is_officer=officer,
            officer_title=_TITLES[k] if officer else None,
        )
        insiders.append(
            _Insider(
                owner,
                float(rng.integers(20, 900)) * 1000,
                float(rng.integers(10, 200)) * 1000,
                round(start_price * float(rng.uniform(0.4, 0.9)), 2),
            )
        )
    return insiders


def _filing_lines(
    rng: np.random.Generator, insider: _Insider, day: dt.date, close: float, title: str
) -> tuple[list[NonDerivativeLine], list[DerivativeLine], list[tuple[str, str]]]:
    kind = rng.choice(["sell", "sell", "buy", "award", "exercise"])
    lines: list[NonDerivativeLine] = []
    derivative: list[DerivativeLine] = []
    footnotes: list[tuple[str, str]] = []
    if kind == "exercise" and insider.options >= 1000:
        quantity = float(min(insider.options, rng.integers(1, 20) * 1000))
        insider.options -= quantity
        insider.shares += quantity
        derivative.append(
            DerivativeLine(
                security_title="Stock Option (Right to Buy)",
                conversion_or_exercise_price=insider.strike,
                transaction_date=day,
                transaction_code="M",
                shares=quantity,
                price_per_share=0.0,
                acquired_disposed="D",
                exercise_date=None,
                expiration_date=dt.date(day.year + 5, day.month, min(day.day, 28)),
                underlying_title=title,
                underlying_shares=quantity,
                shares_owned_following=insider.options,
                direct_or_indirect="D",
                footnote_ids=("F1",),
            )
        )
        footnotes.append(("F1", _FOOTNOTE_OPTION))
        lines.append(
            NonDerivativeLine(title, insider.shares, "D", day, "M", quantity, insider.strike, "A")
        )
        return lines, derivative, footnotes
    if kind == "award":
        quantity = float(rng.integers(1, 30) * 500)
        insider.shares += quantity
        lines.append(NonDerivativeLine(title, insider.shares, "D", day, "A", quantity, 0.0, "A"))
        return lines, derivative, footnotes
    if kind == "buy":
        quantity = float(rng.integers(1, 20) * 250)
        insider.shares += quantity
        lines.append(
            NonDerivativeLine(
                title,
                insider.shares,
                "D",
                day,
                "P",
                quantity,
                round(close * float(rng.uniform(0.99, 1.01)), 2),
                "A",
            )
        )
        return lines, derivative, footnotes
    # a sale in several lots under a 10b5-1 plan, reported at weighted-average prices
    footnotes += [("F1", _FOOTNOTE_PLAN)]
    for lot in range(int(rng.integers(1, 4))):
        quantity = float(min(insider.shares * 0.05, rng.integers(1, 40) * 100))
        if quantity <= 0:
            break
        insider.shares -= quantity
        price = round(close * float(rng.uniform(0.985, 1.015)), 4)
        note = f"F{lot + 2}"
        footnotes.append(
            (note, _FOOTNOTE_WAP.format(low=f"{price - 0.5:.2f}", high=f"{price + 0.49:.2f}"))
        )
        lines.append(
            NonDerivativeLine(
                title,
                insider.shares,
                "D",
                day,
                "S",
                quantity,
                price,
                "D",
                footnote_ids=("F1", note),
            )
        )
    # an indirect holding through a family trust, reported as a holding line
    lines.append(
        NonDerivativeLine(
            title, float(rng.integers(5, 50)) * 1000, "I", nature_of_ownership="By Family Trust"
        )
    )
    return lines, derivative, footnotes


def build_form4_filings(
    rng: np.random.Generator,
    universe: Universe,
    history: PriceHistory,
    issuers: list[Issuer],
    accessions: AccessionCounter,
) -> list[Form4Filing]:
    """Form 4 filings of ``issuers``' insiders over the last three years, up to ``as_of``."""
    as_of = universe.as_of
    first = max(universe.sessions[0].date(), years_before(as_of, 3))
    filings: list[Form4Filing] = []
    for issuer in issuers:
        security = issuer.securities[0]
        start_close = history.close_on(security.entity_id, first) or 20.0
        insiders = _insiders_of(rng, issuer, start_close, int(rng.integers(3, 6)))
        for insider in insiders:
            day = first + dt.timedelta(days=int(rng.integers(1, 60)))
            while True:
                day += dt.timedelta(days=int(rng.integers(40, 120)))
                if day.weekday() >= 5:
                    day += dt.timedelta(days=7 - day.weekday())
                filed = _business_days_after(day, 2)
                last_trade = security.delisted or as_of
                if filed > as_of or day > last_trade:
                    break
                close = history.close_on(security.entity_id, day)
                if close is None:
                    continue
                non_derivative, derivative, footnotes = _filing_lines(
                    rng, insider, day, close, security.title
                )
                boolean_style = "true/false" if rng.random() < 0.4 else "1/0"
                filings.append(
                    Form4Filing(
                        accession=accessions.next(insider.owner.cik, filed),
                        filed=filed,
                        period_of_report=day,
                        issuer_cik=issuer.cik10,
                        issuer_name=issuer.name_on(day),
                        issuer_ticker=security.ticker_on(day) or security.tickers[-1].ticker,
                        owners=(insider.owner,),
                        non_derivative=tuple(non_derivative),
                        derivative=tuple(derivative),
                        footnotes=tuple(footnotes),
                        aff10b5_one=any(n == "F1" and t == _FOOTNOTE_PLAN for n, t in footnotes),
                        boolean_style=boolean_style,
                    )
                )
    filings.sort(key=lambda f: (f.filed, f.accession))
    return filings


def add_amendment(
    filings: list[Form4Filing], issuer: Issuer, accessions: AccessionCounter, as_of: dt.date
) -> list[Form4Filing]:
    """``filings`` plus a 4/A correcting the first line of ``issuer``'s first filing."""
    for original in filings:
        if original.issuer_cik != issuer.cik10 or not original.non_derivative:
            continue
        line = original.non_derivative[0]
        if line.shares is None:
            continue
        corrected = replace(
            line,
            shares=line.shares + 100,
            shares_owned_following=line.shares_owned_following
            + (100 if line.acquired_disposed == "A" else -100),
        )
        filed = _business_days_after(original.filed, 10)
        if filed > as_of:
            continue
        amendment = replace(
            original,
            accession=accessions.next(original.owners[0].cik, filed),
            filed=filed,
            amendment_of=original.filed,
            non_derivative=(corrected, *original.non_derivative[1:]),
            remarks="This amendment corrects the number of shares reported in Table I, row 1.",
        )
        return sorted([*filings, amendment], key=lambda f: (f.filed, f.accession))
    raise ValueError(f"no Form 4 of {issuer.name} to amend")
