"""Plain records of the SEC documents the demo writes.

The generator fills these; ``sec_formats`` turns them into the bytes SEC publishes (Form 4 XML,
13F-HR primary document and information table, companyfacts JSON, submissions JSON). Amounts are
in plain units (USD, shares); a serializer applies a format's own quirks (13F values in thousands
for filings before 2023).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Address:
    street1: str
    city: str
    state: str
    zip_code: str
    street2: str | None = None  # second address line (suite, floor, "C/O" line moved down)


@dataclass(frozen=True)
class ReportingOwner:
    cik: str  # digits, zero padded to 10
    name: str  # "LAST FIRST" as EDGAR writes individuals
    address: Address
    is_director: bool = False
    is_officer: bool = False
    officer_title: str | None = None
    is_ten_percent_owner: bool = False
    is_other: bool = False


@dataclass(frozen=True)
class NonDerivativeLine:
    """A row of Table I: a transaction, or a holding when ``transaction_code`` is None."""

    security_title: str
    shares_owned_following: float
    direct_or_indirect: str  # "D" or "I"
    transaction_date: dt.date | None = None
    transaction_code: str | None = None  # P, S, A, M, G, F, C, J …
    shares: float | None = None
    price_per_share: float | None = None  # None: no price (written as a footnote-only field)
    acquired_disposed: str | None = None  # "A" or "D"
    nature_of_ownership: str | None = None  # for indirect holdings
    footnote_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class DerivativeLine:
    """A row of Table II (options, RSUs, warrants, convertibles)."""

    security_title: str
    conversion_or_exercise_price: float | None
    transaction_date: dt.date
    transaction_code: str
    shares: float
    price_per_share: float | None
    acquired_disposed: str
    exercise_date: dt.date | None
    expiration_date: dt.date | None
    underlying_title: str
    underlying_shares: float
    shares_owned_following: float
    direct_or_indirect: str
    footnote_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Form4Filing:
    """One Form 4 (or 4/A amendment) ``ownershipDocument``."""

    accession: str  # 0001234567-24-000123
    filed: dt.date
    period_of_report: dt.date
    issuer_cik: str
    issuer_name: str
    issuer_ticker: str
    owners: tuple[ReportingOwner, ...]
    non_derivative: tuple[NonDerivativeLine, ...] = ()
    derivative: tuple[DerivativeLine, ...] = ()
    footnotes: tuple[tuple[str, str], ...] = ()  # (id "F1", text)
    remarks: str | None = None
    amendment_of: dt.date | None = None  # original submission date; set on a 4/A
    aff10b5_one: bool | None = None  # X0508 and later; None leaves the element out
    boolean_style: str = "1/0"  # "1/0" or "true/false": both appear in real filings
    schema_version: str = "X0508"

    @property
    def document_type(self) -> str:
        return "4/A" if self.amendment_of else "4"


@dataclass(frozen=True, slots=True)  # slots: the large demo holds 400,000 of them
class Holding13F:
    """One row of a 13F information table; ``value_usd`` in dollars."""

    name_of_issuer: str
    title_of_class: str
    cusip: str
    value_usd: int
    shares: int
    sh_prn: str = "SH"
    put_call: str | None = None  # "Put" / "Call"
    investment_discretion: str = "SOLE"
    other_manager: str | None = None
    voting_sole: int = 0
    voting_shared: int = 0
    voting_none: int = 0
    figi: str | None = None


@dataclass(frozen=True)
class Filing13F:
    """A 13F-HR: cover page plus information table."""

    accession: str
    filed: dt.date
    period: dt.date  # reportCalendarOrQuarter
    manager_cik: str
    manager_name: str
    manager_address: Address
    signer_name: str
    holdings: tuple[Holding13F, ...]
    amendment_number: int | None = None  # 13F-HR/A when set
    amendment_type: str | None = None  # "RESTATEMENT" or "NEW HOLDINGS"
    form13f_file_number: str | None = None  # "028-12345"; None derives one from the CIK
    signer_title: str = "Chief Compliance Officer"
    signer_phone: str = "212-555-0100"

    @property
    def form_type(self) -> str:
        return "13F-HR/A" if self.amendment_number else "13F-HR"

    @property
    def values_in_thousands(self) -> bool:
        """SEC's rule: information tables filed before 2023-01-03 report thousands of dollars."""
        return self.filed < dt.date(2023, 1, 3)


@dataclass(frozen=True)
class Fact:
    """One XBRL fact as companyfacts lists it."""

    taxonomy: str  # "us-gaap", "dei"
    tag: str  # "Revenues"
    unit: str  # "USD", "shares", "USD/shares"
    end: dt.date
    value: float | int
    accession: str
    fy: int  # fiscal year of the *filing*
    fp: str  # FY, Q1, Q2, Q3 (of the filing)
    form: str  # 10-K, 10-Q, 10-K/A, 10-Q/A
    filed: dt.date
    start: dt.date | None = None  # None for instant facts
    frame: str | None = None  # CY2023Q1, CY2023Q1I, CY2023


@dataclass(frozen=True, eq=False)  # arrays: compared by identity
class FactColumns:
    """Facts as companyfacts lists them, in columns: one array entry per fact, and the fields
    each fact shares with others (its concept, its filing, its frame) held once and pointed at.
    The generator lists an issuer's facts so, without a Python object per fact."""

    concepts: tuple[tuple[str, str, str], ...]  # (taxonomy, tag, unit)
    filings: tuple[tuple[str, int, str, str, dt.date], ...]  # (accession, fy, fp, form, filed)
    frames: tuple[str, ...]
    concept: np.ndarray  # per fact: its entry of ``concepts``
    value: np.ndarray  # float64
    start: np.ndarray  # int64 proleptic ordinal of the start date; -1 for an instant
    end: np.ndarray  # int64 proleptic ordinal of the end (or instant) date
    filing: np.ndarray  # per fact: its entry of ``filings``
    frame: np.ndarray  # per fact: its entry of ``frames``; -1 for none

    def __len__(self) -> int:
        return len(self.value)

    def records(self) -> list[Fact]:
        """The facts as records, in column order (whole values as ``int``)."""
        facts = []
        for concept, value, start, end, filing, frame in zip(
            self.concept.tolist(),
            self.value.tolist(),
            self.start.tolist(),
            self.end.tolist(),
            self.filing.tolist(),
            self.frame.tolist(),
            strict=True,
        ):
            taxonomy, tag, unit = self.concepts[concept]
            accession, fy, fp, form, filed = self.filings[filing]
            facts.append(
                Fact(
                    taxonomy,
                    tag,
                    unit,
                    dt.date.fromordinal(end),
                    int(value) if value.is_integer() else value,
                    accession,
                    fy,
                    fp,
                    form,
                    filed,
                    start=None if start < 0 else dt.date.fromordinal(start),
                    frame=None if frame < 0 else self.frames[frame],
                )
            )
        return facts


#: date ordinals (to the year 9999) fit in this many bits
_ORDINAL_BITS = 22


def period_keys(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """One int64 per (start, end) of date ordinals (start -1 for an instant), ordered as the
    pairs are, so that ``np.unique`` finds distinct periods on one column."""
    return ((start + 1) << _ORDINAL_BITS) | end


def period_of_key(key: int) -> tuple[int, int]:
    """The (start, end) ``period_keys`` made ``key`` of."""
    return (key >> _ORDINAL_BITS) - 1, key & ((1 << _ORDINAL_BITS) - 1)


@dataclass(frozen=True)
class CompanyFacts:
    cik: str
    entity_name: str
    facts: tuple[Fact, ...]
    labels: dict[str, tuple[str, str]] = field(default_factory=dict)  # tag -> (label, description)


@dataclass(frozen=True, slots=True)  # slots: the large demo holds 180,000 of them
class FilingIndexEntry:
    """One filing in a submissions JSON ``filings.recent`` column set."""

    accession: str
    filing_date: dt.date
    report_date: dt.date | None
    form: str
    primary_document: str
    primary_doc_description: str
    size: int
    is_xbrl: bool
    # When the SEC accepted the filing (UTC). None: a fixed time of day derived from the
    # accession, so the same record always gives the same JSON.
    acceptance_datetime: dt.datetime | None = None
    act: str | None = None  # "34", "33" or ""; None: "" for Forms 3/4/5, else "34"
    file_number: str = ""  # "001-40357"; empty for Form 4s, as SEC writes them
    film_number: str = ""
    items: str = ""  # 8-K items, "2.02,9.01"


@dataclass(frozen=True)
class FormerName:
    name: str
    date_from: dt.date
    date_to: dt.date


@dataclass(frozen=True)
class Submissions:
    cik: str
    name: str
    entity_type: str  # "operating" for companies, "other" for individuals
    sic: str | None
    sic_description: str | None
    tickers: tuple[str, ...]
    exchanges: tuple[str, ...]
    fiscal_year_end: str  # "1231"
    state_of_incorporation: str
    address: Address
    former_names: tuple[FormerName, ...] = ()
    filings: tuple[FilingIndexEntry, ...] = ()  # newest first
    ein: str | None = None
    category: str = ""  # "Large accelerated filer", … ; "" for individuals
    phone: str = ""
    owner_org: str = ""  # SEC's reviewing office, "04 Manufacturing"; "" for individuals
