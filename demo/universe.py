"""Who is in the demo universe: issuers, their securities and every ticker's validity period.

The first issuers are built on purpose for the scenarios DESIGN.md names (share classes, an
ambiguous ticker, a reused ticker, a rename, a delisting, an issuer without a listed security);
the rest are drawn from the seeded random generator.
"""

from __future__ import annotations

import datetime as dt
import string
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from findata.demo.sizes import DemoSize

ISSUER_ID_BASE = 1_000_000
SECURITY_ID_BASE = 2_000_000
CIK_BASE = 1_900_000

SECTORS: tuple[tuple[str, str, str, str], ...] = (
    # (GICS sector, GICS industry group, SIC code, NAICS code)
    ("Information Technology", "Semiconductors & Semiconductor Equipment", "3674", "334413"),
    ("Information Technology", "Software & Services", "7372", "511210"),
    ("Health Care", "Pharmaceuticals, Biotechnology & Life Sciences", "2834", "325412"),
    ("Health Care", "Health Care Equipment & Services", "3841", "339112"),
    ("Financials", "Banks", "6022", "522110"),
    ("Financials", "Insurance", "6331", "524126"),
    ("Consumer Discretionary", "Consumer Discretionary Distribution & Retail", "5331", "452210"),
    ("Consumer Staples", "Food, Beverage & Tobacco", "2080", "312111"),
    ("Industrials", "Capital Goods", "3560", "333999"),
    ("Energy", "Energy", "1311", "211120"),
    ("Utilities", "Utilities", "4911", "221112"),
    ("Materials", "Materials", "2800", "325199"),
    ("Communication Services", "Media & Entertainment", "4841", "515210"),
    ("Real Estate", "Equity Real Estate Investment Trusts (REITs)", "6798", "531120"),
)
SIC_DESCRIPTIONS = {
    "3674": "Semiconductors & Related Devices",
    "7372": "Services-Prepackaged Software",
    "2834": "Pharmaceutical Preparations",
    "3841": "Surgical & Medical Instruments & Apparatus",
    "6022": "State Commercial Banks",
    "6331": "Fire, Marine & Casualty Insurance",
    "5331": "Retail-Variety Stores",
    "2080": "Beverages",
    "3560": "General Industrial Machinery & Equipment",
    "1311": "Crude Petroleum & Natural Gas",
    "4911": "Electric Services",
    "2800": "Chemicals & Allied Products",
    "4841": "Cable & Other Pay Television Services",
    "6798": "Real Estate Investment Trusts",
}

_NAME_FIRST = [
    "Northwind",
    "Blue",
    "Harbor",
    "Summit",
    "Granite",
    "Silver",
    "Pioneer",
    "Crescent",
    "Atlas",
    "Meridian",
    "Redwood",
    "Beacon",
    "Cobalt",
    "Evergreen",
    "Falcon",
    "Horizon",
    "Ironclad",
    "Juniper",
    "Keystone",
    "Lakeshore",
    "Magnolia",
    "Nimbus",
    "Orion",
    "Pinnacle",
    "Quarry",
    "Riverbend",
    "Sable",
    "Tidewater",
    "Upland",
    "Vantage",
    "Westfield",
    "Yarrow",
    "Zenith",
    "Aurora",
    "Bristle",
    "Cascade",
    "Driftwood",
    "Ember",
    "Foxglove",
    "Glacier",
    "Hollow",
    "Indigo",
    "Jasper",
    "Kestrel",
    "Lumen",
    "Marble",
    "Nordic",
    "Oakmont",
    "Prairie",
    "Quill",
    "Rustic",
    "Sterling",
    "Thistle",
    "Umber",
    "Valor",
    "Willow",
    "Arbor",
    "Boulder",
    "Cedar",
]
_NAME_SECOND = {
    "Information Technology": ("Semiconductor", "Micro", "Software", "Systems", "Networks", "Data"),
    "Health Care": ("Therapeutics", "Biosciences", "Medical", "Pharma", "Health", "Diagnostics"),
    "Financials": ("Bancorp", "Financial", "Trust", "Insurance", "Capital", "Holdings"),
    "Consumer Discretionary": ("Retail", "Outfitters", "Brands", "Stores", "Motors", "Leisure"),
    "Consumer Staples": ("Foods", "Beverage", "Farms", "Provisions", "Household", "Grocers"),
    "Industrials": ("Industries", "Machinery", "Aerospace", "Logistics", "Rail", "Tools"),
    "Energy": ("Energy", "Petroleum", "Resources", "Drilling", "Midstream", "Oil"),
    "Utilities": ("Power", "Electric", "Utilities", "Gas", "Water", "Grid"),
    "Materials": ("Chemicals", "Materials", "Mining", "Steel", "Paper", "Minerals"),
    "Communication Services": (
        "Media",
        "Communications",
        "Broadcasting",
        "Telecom",
        "Studios",
        "Interactive",
    ),
    "Real Estate": ("Realty", "Properties", "REIT", "Land", "Estates", "Towers"),
}
_SUFFIX = ("Inc", "Corp", "Co", "Holdings Inc", "Group Inc", "Ltd")
_STATES = ("DE", "DE", "DE", "NY", "CA", "TX", "NV", "MD", "OH", "WA")
_CITIES = (
    ("NEW YORK", "NY", "10017"),
    ("SAN JOSE", "CA", "95110"),
    ("AUSTIN", "TX", "78701"),
    ("CHICAGO", "IL", "60601"),
    ("BOSTON", "MA", "02110"),
    ("DENVER", "CO", "80202"),
    ("SEATTLE", "WA", "98101"),
    ("ATLANTA", "GA", "30303"),
    ("MIAMI", "FL", "33131"),
)
_FIGI_CHARS = "BCDFGHJKLMNPQRSTVWXYZ0123456789"


@dataclass
class TickerPeriod:
    """``ticker`` named the entity from ``valid_from`` to ``valid_to`` (inclusive; None = now)."""

    ticker: str
    valid_from: dt.date
    valid_to: dt.date | None


@dataclass
class Security:
    """A listed instrument; ``listed``..``delisted`` bound its trading days (inclusive)."""

    entity_id: int
    issuer: Issuer
    figi: str
    cusip: str
    exchange: str
    share_class: str | None
    listed: dt.date
    delisted: dt.date | None
    tickers: list[TickerPeriod]
    shares_outstanding: int
    title: str = "Common Stock"

    def ticker_on(self, day: dt.date) -> str | None:
        """The ticker that named this security on ``day`` (its own, not a shared one)."""
        for period in self.tickers:
            if period.valid_from <= day and (period.valid_to is None or day <= period.valid_to):
                return period.ticker
        return None

    @property
    def primary_tickers(self) -> list[TickerPeriod]:
        """Ticker periods that are the security's own (a shared class ticker excluded)."""
        return [p for p in self.tickers if not (self.share_class and "-" not in p.ticker)]


@dataclass
class Issuer:
    """A company: the SEC filer, the entity fundamentals belong to."""

    entity_id: int
    cik: str
    name: str
    sector: str
    group: str
    sic: str
    naics: str
    state: str
    city: tuple[str, str, str]
    securities: list[Security] = field(default_factory=list)
    former_names: list[tuple[str, dt.date, dt.date]] = field(default_factory=list)
    issuer_tickers: list[TickerPeriod] = field(default_factory=list)  # issuer-grain rows
    pays_dividends: bool = False

    @property
    def cik10(self) -> str:
        return self.cik.zfill(10)

    def name_on(self, day: dt.date) -> str:
        """The company's name on ``day`` (former names count)."""
        for name, start, end in self.former_names:
            if start <= day <= end:
                return name
        return self.name


@dataclass
class Universe:
    """Every issuer and security of the demo, with the trading sessions they live on."""

    sessions: pd.DatetimeIndex
    issuers: list[Issuer]
    special: dict[str, object]
    #: the first ``scenario_issuers`` issuers are the ones built for the scenarios
    scenario_issuers: int = 0

    @property
    def ordinary_issuers(self) -> list[Issuer]:
        """Issuers drawn at random, none of them built for a scenario."""
        return self.issuers[self.scenario_issuers :]

    @property
    def securities(self) -> list[Security]:
        return [s for i in self.issuers for s in i.securities]

    @property
    def as_of(self) -> dt.date:
        return self.sessions[-1].date()


def cusip_check_digit(base8: str) -> str:
    """The CUSIP check digit (modulus 10 'double add double') for eight characters."""
    total = 0
    for position, char in enumerate(base8):
        value = int(char) if char.isdigit() else string.ascii_uppercase.index(char) + 10
        if position % 2 == 1:
            value *= 2
        total += value // 10 + value % 10
    return str((10 - total % 10) % 10)


class _Namer:
    """Unique tickers, names and identifiers from the seeded generator."""

    def __init__(self, rng: np.random.Generator, reserved: set[str]) -> None:
        self.rng = rng
        self.used_tickers = set(reserved)
        self.used_names: set[str] = set()
        self.used_cusip6: set[str] = set()
        self.used_figi: set[str] = set()

    def ticker(self, name: str) -> str:
        letters = [c for c in name.upper() if c.isalpha()]
        for length in (3, 4, 2, 5):
            candidate = "".join(letters[:1] + list(self.rng.choice(letters[1:], length - 1)))
            if candidate not in self.used_tickers:
                self.used_tickers.add(candidate)
                return candidate
        while True:
            candidate = "".join(self.rng.choice(list(string.ascii_uppercase), 4))
            if candidate not in self.used_tickers:
                self.used_tickers.add(candidate)
                return candidate

    def company_name(self, sector: str) -> str:
        while True:
            name = " ".join(
                (
                    str(self.rng.choice(_NAME_FIRST)),
                    str(self.rng.choice(_NAME_SECOND[sector])),
                    str(self.rng.choice(_SUFFIX)),
                )
            )
            if name not in self.used_names:
                self.used_names.add(name)
                return name

    def cusip6(self) -> str:
        while True:
            issuer_part = "".join(self.rng.choice(list(string.digits), 3)) + "".join(
                self.rng.choice(list(string.ascii_uppercase + string.digits), 3)
            )
            if issuer_part not in self.used_cusip6:
                self.used_cusip6.add(issuer_part)
                return issuer_part

    def figi(self) -> str:
        while True:
            figi = "BBG00" + "".join(self.rng.choice(list(_FIGI_CHARS), 7))
            if figi not in self.used_figi:
                self.used_figi.add(figi)
                return figi


def _session_near(sessions: pd.DatetimeIndex, day: dt.date) -> dt.date:
    """The first session on or after ``day`` (the last one if none)."""
    position = min(sessions.searchsorted(pd.Timestamp(day)), len(sessions) - 1)
    return sessions[position].date()


def build_universe(
    rng: np.random.Generator, size: DemoSize, sessions: pd.DatetimeIndex
) -> Universe:
    """Issuers and securities for ``size``, over ``sessions``; the scenario cases first."""
    first = sessions[0].date()
    n = len(sessions)
    namer = _Namer(rng, reserved=set())
    issuers: list[Issuer] = []
    special: dict[str, object] = {}
    securities: list[Security] = []  # every issuer's, in the order they are made

    def new_issuer(sector_index: int | None = None) -> Issuer:
        index = len(issuers)
        sector, group, sic, naics = SECTORS[
            sector_index if sector_index is not None else int(rng.integers(len(SECTORS)))
        ]
        issuer = Issuer(
            entity_id=ISSUER_ID_BASE + index + 1,
            cik=str(CIK_BASE + 7 * index + int(rng.integers(7))),
            name=namer.company_name(sector),
            sector=sector,
            group=group,
            sic=sic,
            naics=naics,
            state=str(rng.choice(_STATES)),
            city=_CITIES[int(rng.integers(len(_CITIES)))],
            pays_dividends=bool(rng.random() < 0.45),
        )
        issuers.append(issuer)
        return issuer

    def new_security(
        issuer: Issuer,
        listed: dt.date,
        delisted: dt.date | None,
        tickers: list[TickerPeriod],
        exchange: str | None = None,
        share_class: str | None = None,
        issue: str = "10",
    ) -> Security:
        cusip6 = issuer_cusip6.setdefault(issuer.entity_id, namer.cusip6())
        security = Security(
            entity_id=SECURITY_ID_BASE + len(securities) + 1,
            issuer=issuer,
            figi=namer.figi(),
            cusip=cusip6 + issue + cusip_check_digit(cusip6 + issue),
            exchange=exchange or str(rng.choice(["XNYS", "XNAS", "XNAS"])),
            share_class=share_class,
            listed=listed,
            delisted=delisted,
            tickers=tickers,
            shares_outstanding=int(rng.integers(40, 3000)) * 1_000_000,
            title=f"Class {share_class} Common Stock" if share_class else "Common Stock",
        )
        issuer.securities.append(security)
        securities.append(security)
        return security

    issuer_cusip6: dict[int, str] = {}

    # plain: a common stock over the whole history, paying dividends
    plain = new_issuer(0)
    plain.pays_dividends = True
    special["plain"] = new_security(
        plain, first, None, [TickerPeriod(namer.ticker(plain.name), first, None)], "XNAS"
    )

    # share classes: class tickers XXX-A / XXX-B, and the bare XXX naming both classes
    dual = new_issuer(12)
    shared = namer.ticker(dual.name)
    classes = []
    for letter, issue in (("A", "10"), ("B", "20")):
        classes.append(
            new_security(
                dual,
                first,
                None,
                [
                    TickerPeriod(f"{shared}-{letter}", first, None),
                    TickerPeriod(shared, first, None),
                ],
                "XNAS",
                share_class=letter,
                issue=issue,
            )
        )
        namer.used_tickers.add(f"{shared}-{letter}")
    special["share_classes"] = (dual, shared, classes)

    # ambiguous: one ticker names securities of two companies (on two venues) at the same time
    amb_ticker = namer.ticker("MAXIMUS")
    amb_start = sessions[n // 3].date()
    amb = []
    for exchange, since in (("XNYS", first), ("XNAS", amb_start)):
        issuer = new_issuer()
        amb.append(
            new_security(issuer, since, None, [TickerPeriod(amb_ticker, since, None)], exchange)
        )
    special["ambiguous"] = (amb_ticker, sessions[(n // 3 + n) // 2].date(), amb)

    # reused: a delisted company's ticker later listed by another company
    reused_ticker = namer.ticker("REUSED")
    end_old = sessions[n // 4].date()
    start_new = sessions[n // 4 + 60].date()
    old = new_security(new_issuer(), first, end_old, [TickerPeriod(reused_ticker, first, end_old)])
    new = new_security(
        new_issuer(), start_new, None, [TickerPeriod(reused_ticker, start_new, None)]
    )
    special["reused"] = (reused_ticker, [old, new])

    # renamed: the company changes its name and its ticker on one day
    renamed_issuer = new_issuer(1)
    old_name = renamed_issuer.name
    renamed_issuer.name = namer.company_name(renamed_issuer.sector)
    change = sessions[n // 2].date()
    old_ticker, new_ticker = namer.ticker(old_name), namer.ticker(renamed_issuer.name)
    renamed_issuer.former_names.append((old_name, first, change - dt.timedelta(days=1)))
    renamed = new_security(
        renamed_issuer,
        first,
        None,
        [
            TickerPeriod(old_ticker, first, change - dt.timedelta(days=1)),
            TickerPeriod(new_ticker, change, None),
        ],
    )
    special["renamed"] = (old_ticker, new_ticker, renamed, change)

    # delisted: trading stops on last_date, the ticker lapses with it
    last_date = sessions[n - n // 5].date()
    delisted_issuer = new_issuer()
    delisted_ticker = namer.ticker(delisted_issuer.name)
    special["delisted"] = new_security(
        delisted_issuer, first, last_date, [TickerPeriod(delisted_ticker, first, last_date)]
    )

    # issuer without listing: the stock leaves the exchange, the ticker keeps naming the company
    orphan = new_issuer()
    orphan_ticker = namer.ticker(orphan.name)
    orphan_end = sessions[n - n // 6].date()
    new_security(orphan, first, orphan_end, [TickerPeriod(orphan_ticker, first, orphan_end)])
    orphan.issuer_tickers.append(
        TickerPeriod(orphan_ticker, orphan_end + dt.timedelta(days=1), None)
    )
    special["issuer_without_listing"] = (orphan_ticker, sessions[n - n // 12].date(), orphan)

    # index events: one company takes another's place in the sp500 (indexes.Replacement);
    # both trade under tickers of their own over the whole history
    swap = []
    for _ in ("leaving", "joining"):
        issuer = new_issuer()
        ticker = namer.ticker(issuer.name)
        swap.append(new_security(issuer, first, None, [TickerPeriod(ticker, first, None)]))
    special["index_swap"] = tuple(swap)

    # the rest: ordinary companies, some listed later, a few delisted
    scenario_issuers = len(issuers)
    while len(securities) < size.securities:
        issuer = new_issuer()
        listed = first
        if rng.random() < 0.15:
            listed = sessions[int(rng.integers(1, n - 250))].date()
        delisted = None
        if rng.random() < 0.05:
            start_index = sessions.searchsorted(pd.Timestamp(listed))
            if start_index + 300 < n - 1:
                delisted = sessions[int(rng.integers(start_index + 250, n - 1))].date()
        ticker = namer.ticker(issuer.name)
        new_security(issuer, listed, delisted, [TickerPeriod(ticker, listed, delisted)])

    special["split_candidates"] = [special["plain"], *classes]
    return Universe(
        sessions=sessions, issuers=issuers, special=special, scenario_issuers=scenario_issuers
    )


def session_on_or_after(universe: Universe, day: dt.date) -> dt.date:
    """The first trading session on or after ``day`` (the last session if there is none)."""
    return _session_near(universe.sessions, day)
