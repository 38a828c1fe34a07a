"""Reader for SEC Form 13F-HR: cover page (primary_doc.xml), information table, value unit.

A 13F filing is two XML documents: the cover (``edgarSubmission``) and the information table
(``informationTable``). They arrive either as two files or together inside the EDGAR
full-submission ``.txt``. Filers bind the namespaces every possible way (``ns1:``, ``com:``,
default namespaces, unused prefixes), so every lookup goes by local name.

The ``<value>`` column changed unit on 2023-01-03: before, thousands of dollars; from then on,
dollars. ``decide_value_unit`` makes that call per filing (see its docstring for the checks).
The cover's ``tableValueTotal`` is reconciled with the rows' sum (``reconcile_cover_total``): a
difference of up to one unit a row is rounding, a larger one a mismatch.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

import pandas as pd
from lxml import etree

from findata.sources.readers.coerce import pad_cik, parse_sec_bool, typed_frame
from findata.sources.readers.errors import MalformedFileError
from findata.sources.readers.sec_sgml import read_submission_text
from findata.sources.readers.sec_xml import (
    child_text,
    find_child,
    iter_children,
    iter_descendants,
    local_name,
    parse_xml,
)

ValueUnit = Literal["thousands", "dollars"]
CoverTotalStatus = Literal["equal", "rounding", "mismatch"]

#: dollars in one unit of ``<value>``
UNIT_DOLLARS: dict[ValueUnit, int] = {"thousands": 1000, "dollars": 1}

#: SEC release 34-95148: information tables filed on or after this day report whole dollars
DOLLARS_FROM = dt.date(2023, 1, 3)

#: Highest believable median price per share (USD) of the SH rows of one portfolio.
#: Reading dollars as thousands inflates every implied price 1000-fold, so a typical median of
#: $20–$200 becomes $20,000–$200,000. A correct thousands reading stays near the true median:
#: above $1,000 would need more than half the positions in stocks like BRK-A, NVR or AZO, which
#: no real portfolio has. A misread only slips under the threshold when the true median is below
#: $1, i.e. a penny-stock book. $1,000 sits in the (logarithmic) middle of the two cases.
MAX_PLAUSIBLE_MEDIAN_PRICE = 1000.0

_ACCESSION_IN_NAME = re.compile(r"(?<!\d)(\d{10}-\d{2}-\d{6})(?![\d])")
_INTEGER = re.compile(r"^-?\d+(?:\.0*)?$")

INFORMATION_TABLE_COLUMNS: dict[str, str] = {
    "line_number": "int64",
    "name_of_issuer": "string",
    "title_of_class": "string",
    "cusip": "string",
    "figi": "string",
    "value_reported": "Int64",
    "shares": "Int64",
    "sh_prn": "string",
    "put_call": "string",
    "investment_discretion": "string",
    "other_manager": "string",
    "voting_sole": "Int64",
    "voting_shared": "Int64",
    "voting_none": "Int64",
}


class OtherManager(NamedTuple):
    """A manager listed on the cover as reporting for this filer (cover ``otherManagersInfo``)."""

    cik: str | None
    name: str | None
    file_number: str | None


class IncludedManager(NamedTuple):
    """An "other included manager" of the summary page; ``other_manager`` rows cite its number."""

    sequence_number: int | None
    cik: str | None
    name: str | None
    file_number: str | None


@dataclass(frozen=True)
class Cover13F:
    """The cover page and summary page of a 13F filing (primary_doc.xml)."""

    form_type: str
    period: dt.date
    manager_cik: str
    manager_name: str | None
    report_type: str | None
    amendment_number: int | None
    amendment_type: str | None
    signature_date: dt.date | None
    table_entry_total: int | None
    table_value_total: int | None
    other_managers: tuple[OtherManager, ...]
    included_managers: tuple[IncludedManager, ...]
    form13f_file_number: str | None
    crd_number: str | None
    sec_file_number: str | None
    is_amendment: bool | None


@dataclass(frozen=True)
class ValueUnitDecision:
    """Which unit a filing's ``<value>`` column is in, and why."""

    unit: ValueUnit
    reason: str
    median_implied_price: float | None  # USD per share over SH rows under a thousands reading


@dataclass(frozen=True)
class CoverTotal:
    """The cover's ``tableValueTotal`` against the sum of the information table's values.

    Each row's value is rounded to the filing's unit, so the sum of the rows may differ from the
    cover total by up to one unit a row: ``tolerance_usd`` (the number of rows times the unit in
    dollars, $1,000 a row in the thousands era, $1 after). A larger difference is a mismatch.
    """

    difference_usd: int  # the cover total minus the rows' sum, in dollars
    ratio: float | None  # difference_usd relative to the cover total; None when that is 0
    tolerance_usd: int

    @property
    def status(self) -> CoverTotalStatus:
        """``equal``, ``rounding`` (within the tolerance) or ``mismatch``."""
        if self.difference_usd == 0:
            return "equal"
        return "rounding" if abs(self.difference_usd) <= self.tolerance_usd else "mismatch"


def reconcile_cover_total(
    cover_total: int | None, values: pd.Series, unit: ValueUnit
) -> CoverTotal | None:
    """The cover total (in the filing's unit) against the rows' ``values`` (in the same unit);
    None when the cover gives no total."""
    if cover_total is None:
        return None
    dollars = UNIT_DOLLARS[unit]
    difference = (cover_total - int(values.sum())) * dollars
    return CoverTotal(
        difference_usd=difference,
        ratio=difference / (cover_total * dollars) if cover_total else None,
        tolerance_usd=len(values) * dollars,
    )


@dataclass(frozen=True, eq=False)
class Filing13FDocument:
    """A whole 13F-HR: cover, holdings (``INFORMATION_TABLE_COLUMNS`` + ``value_usd`` Int64)."""

    accession: str | None
    filed: dt.date | None
    cover: Cover13F
    holdings: pd.DataFrame
    value_unit: ValueUnit
    unit_reason: str
    cover_total: CoverTotal | None  # None when the cover gives no tableValueTotal
    entries_match_cover: bool | None  # None when the cover gives no tableEntryTotal


def read_13f_cover(source: str | Path | bytes, *, name: str | Path | None = None) -> Cover13F:
    """Read a 13F cover document (``edgarSubmission``) from a path or XML bytes.

    ``name`` labels errors when ``source`` is bytes. Dates on 13F covers are ``MM-DD-YYYY``.
    Raises ``MalformedFileError`` for a root other than ``edgarSubmission``, a submission type
    that is not a 13F form, and a missing filer CIK or report period.
    """
    where = name if name is not None else source if not isinstance(source, bytes) else "<bytes>"
    root = parse_xml(source, name=name)
    if local_name(root) != "edgarSubmission":
        raise MalformedFileError(
            where, f"root element is <{local_name(root)}>, expected <edgarSubmission>"
        )
    form_type = child_text(root, "headerData", "submissionType")
    if form_type is None or not form_type.startswith("13F-"):
        raise MalformedFileError(where, f"<submissionType> is {form_type!r}, expected a 13F form")
    cik_element = find_child(root, "headerData", "filerInfo", "filer", "credentials", "cik")
    cik_text = child_text(cik_element)
    if cik_text is None:
        raise MalformedFileError(where, "missing <headerData>/…/<credentials>/<cik>")
    cover = find_child(root, "formData", "coverPage")
    summary = find_child(root, "formData", "summaryPage")
    period = _cover_date(where, cover, "reportCalendarOrQuarter") or _cover_date(
        where, find_child(root, "headerData", "filerInfo"), "periodOfReport"
    )
    if period is None:
        raise MalformedFileError(where, "missing <reportCalendarOrQuarter>")
    return Cover13F(
        form_type=form_type,
        period=period,
        manager_cik=_cik(where, cik_element),
        manager_name=child_text(cover, "filingManager", "name"),
        report_type=child_text(cover, "reportType"),
        amendment_number=_integer(where, find_child(cover, "amendmentNo")),
        amendment_type=child_text(cover, "amendmentInfo", "amendmentType"),
        signature_date=_cover_date(
            where, find_child(root, "formData", "signatureBlock"), "signatureDate"
        ),
        table_entry_total=_integer(where, find_child(summary, "tableEntryTotal")),
        table_value_total=_integer(where, find_child(summary, "tableValueTotal")),
        other_managers=_other_managers(where, find_child(cover, "otherManagersInfo")),
        included_managers=_included_managers(where, find_child(summary, "otherManagers2Info")),
        form13f_file_number=child_text(cover, "form13FFileNumber"),
        crd_number=child_text(cover, "crdNumber"),
        sec_file_number=child_text(cover, "secFileNumber"),
        is_amendment=_boolean(where, find_child(cover, "isAmendment")),
    )


def read_13f_information_table(
    source: str | Path | bytes, *, name: str | Path | None = None
) -> pd.DataFrame:
    """Read a 13F information table (``informationTable``) from a path or XML bytes.

    Returns one row per ``<infoTable>`` with ``INFORMATION_TABLE_COLUMNS``: ``line_number``
    (1.. in document order), ``value_reported`` exactly as written (its unit is decided per
    filing, see ``decide_value_unit``), ``shares`` the ``sshPrnamt`` (shares or principal amount
    per ``sh_prn``), optional ``figi``/``put_call``/``other_manager`` as NA when absent.
    ``name`` labels errors when ``source`` is bytes.
    """
    where = name if name is not None else source if not isinstance(source, bytes) else "<bytes>"
    root = parse_xml(source, name=name)
    if local_name(root) != "informationTable":
        raise MalformedFileError(
            where, f"root element is <{local_name(root)}>, expected <informationTable>"
        )
    rows = [
        _holding_row(where, number, row)
        for number, row in enumerate(iter_children(root, "infoTable"), start=1)
    ]
    return typed_frame(rows, INFORMATION_TABLE_COLUMNS)


def median_implied_price(holdings: pd.DataFrame) -> float | None:
    """Median of ``value_reported * 1000 / shares`` over SH rows with shares > 0 (None if none).

    That is the price per share the table implies if its values are thousands of dollars.
    Principal-amount (PRN) rows are left out: their "shares" are dollars of face value.
    """
    sh_rows = holdings[
        (holdings["sh_prn"].fillna("").str.upper() == "SH")
        & (holdings["shares"].fillna(0) > 0)
        & holdings["value_reported"].notna()
    ]
    if sh_rows.empty:
        return None
    prices = (
        sh_rows["value_reported"].astype("float64") * 1000 / sh_rows["shares"].astype("float64")
    )
    return float(prices.median())


def decide_value_unit(filed: dt.date, holdings: pd.DataFrame) -> ValueUnitDecision:
    """Decide whether a filing's ``value_reported`` is in thousands of dollars or in dollars.

    ``filed`` is the best known filing date (the envelope's FILED AS OF DATE, else the date the
    caller knows, else the cover's signature date, which precedes filing by a day or two).
    Filed on or after ``DOLLARS_FROM``: dollars. Filed earlier: thousands, unless the implied
    median price per share under a thousands reading exceeds ``MAX_PLAUSIBLE_MEDIAN_PRICE`` —
    then the filer already wrote dollars (some did, ahead of the rule). Pure: reads
    ``value_reported``, ``shares`` and ``sh_prn`` of ``holdings`` only.
    """
    if filed >= DOLLARS_FROM:
        return ValueUnitDecision(
            "dollars", f"filed {filed.isoformat()}, on or after {DOLLARS_FROM.isoformat()}", None
        )
    median = median_implied_price(holdings)
    if median is not None and median > MAX_PLAUSIBLE_MEDIAN_PRICE:
        return ValueUnitDecision(
            "dollars",
            f"filed {filed.isoformat()} (thousands era) but a thousands reading implies a "
            f"median price of {median:,.2f} USD per share (> {MAX_PLAUSIBLE_MEDIAN_PRICE:,.0f}):"
            " the filer wrote dollars",
            median,
        )
    return ValueUnitDecision(
        "thousands", f"filed {filed.isoformat()}, before {DOLLARS_FROM.isoformat()}", median
    )


def read_13f_filing(
    primary_doc_path: str | Path,
    information_table_path: str | Path,
    filed: dt.date | None = None,
    accession: str | None = None,
) -> Filing13FDocument:
    """Read a 13F filing stored as two files (cover and information table).

    ``filed`` is the filing date when known; without it the unit decision uses the cover's
    signature date. ``accession`` defaults to one found in the primary document's file or
    folder name. Raises ``MalformedFileError`` as the two readers do, or when no date at all is
    available for the unit decision.
    """
    cover = read_13f_cover(primary_doc_path)
    table = read_13f_information_table(information_table_path)
    return _assemble(
        primary_doc_path, accession or _accession_in_path(primary_doc_path), filed, cover, table
    )


def read_13f_submission_text(path: str | Path) -> Filing13FDocument:
    """Read a 13F filing from its EDGAR full-submission ``.txt`` (cover and table inside).

    The cover is the XML document whose root is ``edgarSubmission``, the table the one whose root
    is ``informationTable``; accession and filing date come from the envelope header.
    """
    submission = read_submission_text(path)
    cover: Cover13F | None = None
    table: pd.DataFrame | None = None
    for document in submission.documents:
        if not document.is_xml:
            continue
        label = f"{path} (document {document.filename or document.type})"
        root_name = _root_local_name(document.content)
        if root_name == "edgarSubmission" and cover is None:
            cover = read_13f_cover(document.content, name=label)
        elif root_name == "informationTable" and table is None:
            table = read_13f_information_table(document.content, name=label)
    if cover is None:
        raise MalformedFileError(
            path, "no 13F cover document (<edgarSubmission>) in the submission"
        )
    if table is None:
        # A 13F-HR that lists no securities still carries a (possibly empty) table document;
        # only notice filings (13F-NT) have none, and those have no holdings to read.
        if not cover.form_type.startswith("13F-NT"):
            raise MalformedFileError(
                path, "no information table (<informationTable>) in the submission"
            )
        table = typed_frame([], INFORMATION_TABLE_COLUMNS)
    return _assemble(path, submission.accession, submission.filed, cover, table)


def _assemble(
    path: str | Path,
    accession: str | None,
    filed: dt.date | None,
    cover: Cover13F,
    table: pd.DataFrame,
) -> Filing13FDocument:
    basis = filed or cover.signature_date
    if basis is None:
        raise MalformedFileError(
            path, "no filing date and no <signatureDate>: cannot tell the unit of <value>"
        )
    decision = decide_value_unit(basis, table)
    factor = UNIT_DOLLARS[decision.unit]
    holdings = table.assign(value_usd=(table["value_reported"] * factor).astype("Int64"))
    return Filing13FDocument(
        accession=accession,
        filed=filed,
        cover=cover,
        holdings=holdings,
        value_unit=decision.unit,
        unit_reason=decision.reason,
        cover_total=reconcile_cover_total(
            cover.table_value_total, table["value_reported"], decision.unit
        ),
        entries_match_cover=(
            None if cover.table_entry_total is None else len(table) == cover.table_entry_total
        ),
    )


def _holding_row(where: str | Path, number: int, row: etree._Element) -> dict[str, Any]:
    amount = find_child(row, "shrsOrPrnAmt")
    voting = find_child(row, "votingAuthority")
    return {
        "line_number": number,
        "name_of_issuer": child_text(row, "nameOfIssuer"),
        "title_of_class": child_text(row, "titleOfClass"),
        "cusip": child_text(row, "cusip"),
        "figi": child_text(row, "figi"),
        "value_reported": _integer(where, find_child(row, "value")),
        "shares": _integer(where, find_child(amount, "sshPrnamt")),
        "sh_prn": child_text(amount, "sshPrnamtType"),
        "put_call": child_text(row, "putCall"),
        "investment_discretion": child_text(row, "investmentDiscretion"),
        "other_manager": child_text(row, "otherManager"),
        "voting_sole": _integer(where, find_child(voting, "Sole")),
        "voting_shared": _integer(where, find_child(voting, "Shared")),
        "voting_none": _integer(where, find_child(voting, "None")),
    }


def _other_managers(where: str | Path, info: etree._Element | None) -> tuple[OtherManager, ...]:
    if info is None:
        return ()
    return tuple(
        OtherManager(
            cik=_optional_cik(where, find_child(manager, "cik")),
            name=child_text(manager, "name"),
            file_number=child_text(manager, "form13FFileNumber"),
        )
        for manager in iter_descendants(info, "otherManager")
    )


def _included_managers(
    where: str | Path, info: etree._Element | None
) -> tuple[IncludedManager, ...]:
    if info is None:
        return ()
    managers = []
    for entry in iter_children(info, "otherManager2"):
        # The manager's fields sit in a nested <otherManager> in the schema; tolerate them flat.
        nested = find_child(entry, "otherManager")
        manager = nested if nested is not None else entry
        managers.append(
            IncludedManager(
                sequence_number=_integer(where, find_child(entry, "sequenceNumber")),
                cik=_optional_cik(where, find_child(manager, "cik")),
                name=child_text(manager, "name"),
                file_number=child_text(manager, "form13FFileNumber"),
            )
        )
    return tuple(managers)


def _root_local_name(content: bytes) -> str | None:
    # Peek at the first element's name without a full parse (the real parse follows).
    match = re.search(rb"<(?![?!])(?:[\w.-]+:)?([\w.-]+)", content)
    return match.group(1).decode("ascii", errors="replace") if match else None


def _accession_in_path(path: str | Path) -> str | None:
    for part in (Path(path).name, Path(path).parent.name):
        match = _ACCESSION_IN_NAME.search(part)
        if match:
            return match.group(1)
    return None


def _fail(where: str | Path, element: etree._Element, problem: str) -> MalformedFileError:
    return MalformedFileError(
        where, f"<{local_name(element)}> at line {element.sourceline}: {problem}"
    )


def _integer(where: str | Path, element: etree._Element | None) -> int | None:
    text = child_text(element)
    if text is None:
        return None
    cleaned = text.replace(",", "")
    if not _INTEGER.match(cleaned):
        raise _fail(where, element, f"{text!r} is not a whole number")
    return int(cleaned.split(".")[0])


def _boolean(where: str | Path, element: etree._Element | None) -> bool | None:
    try:
        return parse_sec_bool(child_text(element))
    except ValueError as exc:
        raise _fail(where, element, str(exc)) from exc


def _cik(where: str | Path, element: etree._Element) -> str:
    try:
        return pad_cik(child_text(element) or "")
    except ValueError as exc:
        raise _fail(where, element, str(exc)) from exc


def _optional_cik(where: str | Path, element: etree._Element | None) -> str | None:
    return None if child_text(element) is None else _cik(where, element)


def _cover_date(where: str | Path, parent: etree._Element | None, name: str) -> dt.date | None:
    element = find_child(parent, name)
    text = child_text(element)
    if text is None:
        return None
    # 13F covers write MM-DD-YYYY; accept ISO too rather than reject a valid date.
    for pattern in ("%m-%d-%Y", "%Y-%m-%d"):
        try:
            return dt.datetime.strptime(text, pattern).date()
        except ValueError:
            continue
    raise _fail(where, element, f"{text!r} is not a MM-DD-YYYY date")
