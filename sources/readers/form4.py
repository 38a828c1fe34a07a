"""Reader for SEC Form 4 (``ownershipDocument`` XML): header, reporting owners, lines, footnotes.

Handles every schema version seen on EDGAR (X0303 … X0508): booleans written ``1``/``0`` or
``true``/``false``, value-or-footnote fields that carry only a footnote reference, files without
an ``<?xml?>`` declaration, derivative-only filings and filings with no transactions at all.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from lxml import etree

from findata.sources.readers.coerce import (
    pad_cik,
    parse_iso_date,
    parse_number,
    parse_sec_bool,
    typed_frame,
)
from findata.sources.readers.errors import MalformedFileError
from findata.sources.readers.sec_xml import (
    ValueField,
    child_text,
    element_text,
    find_child,
    footnote_ids_in,
    iter_children,
    local_name,
    parse_xml,
    read_value_field,
)

#: dashed accession a landing file name starts with: ``0000899243-21-048676_doc4.xml``
_ACCESSION_PREFIX = re.compile(r"^(\d{10}-\d{2}-\d{6})(?![\d-])")
_ACCESSION = re.compile(r"^\d{10}-\d{2}-\d{6}$")
# xs:date allows a timezone suffix (``2021-12-16-05:00``, ``2021-12-16Z``); the day is what counts.
_XS_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:Z|[+-]\d{2}:\d{2})?$")

FORM4_DOCUMENT_TYPES = ("4", "4/A")

OWNER_COLUMNS: dict[str, str] = {
    "owner_cik": "string",
    "owner_name": "string",
    "is_director": "boolean",
    "is_officer": "boolean",
    "officer_title": "string",
    "is_ten_percent_owner": "boolean",
    "is_other": "boolean",
    "other_text": "string",
}

LINE_COLUMNS: dict[str, str] = {
    "table": "string",
    "line_sequence": "int64",
    "kind": "string",
    "security_title": "string",
    "transaction_date": "date",
    "deemed_execution_date": "date",
    "transaction_form_type": "string",
    "transaction_code": "string",
    "equity_swap_involved": "boolean",
    "shares": "float64",
    "price_per_share": "float64",
    "acquired_disposed": "string",
    "shares_owned_following": "float64",
    "value_owned_following": "float64",
    "direct_or_indirect": "string",
    "nature_of_ownership": "string",
    "conversion_or_exercise_price": "float64",
    "exercise_date": "date",
    "expiration_date": "date",
    "underlying_title": "string",
    "underlying_shares": "float64",
    "footnote_ids": "string",
}

FOOTNOTE_COLUMNS: dict[str, str] = {"footnote_id": "string", "text": "string"}

# (table element, table name, {line element: kind}) in the order the form prints them
_TABLES = (
    (
        "nonDerivativeTable",
        "non_derivative",
        {"nonDerivativeTransaction": "transaction", "nonDerivativeHolding": "holding"},
    ),
    (
        "derivativeTable",
        "derivative",
        {"derivativeTransaction": "transaction", "derivativeHolding": "holding"},
    ),
)


@dataclass(frozen=True)
class Form4Header:
    """Document-level facts of one Form 4 (dates are ``datetime.date``)."""

    accession: str | None
    schema_version: str | None
    document_type: str
    period_of_report: dt.date
    date_of_original_submission: dt.date | None
    issuer_cik: str
    issuer_name: str | None
    issuer_ticker: str | None
    aff10b5_one: bool | None
    not_subject_to_section16: bool | None
    remarks: str | None
    signature_date: dt.date | None


@dataclass(frozen=True, eq=False)
class Form4Document:
    """A parsed Form 4: header plus owners, lines and footnotes as typed DataFrames."""

    path: str
    header: Form4Header
    owners: pd.DataFrame
    lines: pd.DataFrame
    footnotes: pd.DataFrame


def accession_from_file_name(path: str | Path) -> str | None:
    """The dashed accession a landing file name starts with (``0000899243-21-048676_…``)."""
    match = _ACCESSION_PREFIX.match(Path(path).name)
    return match.group(1) if match else None


def read_form4(path: str | Path, accession: str | None = None) -> Form4Document:
    """Read one Form 4 XML file.

    The accession comes from the file name when it starts with one, else from ``accession``,
    else it is None. Returns a ``Form4Document`` whose frames have these columns:

    - ``owners``: ``OWNER_COLUMNS`` (CIKs 10-digit strings, role flags pandas ``boolean``);
    - ``lines``: ``LINE_COLUMNS``, one row per line of both tables in document order, dates as
      ``DATE_DTYPE``, amounts ``float64`` (fractional shares exist), ``footnote_ids`` the ids the
      line references anywhere, comma-joined in order of first appearance (NA when none);
    - ``footnotes``: ``FOOTNOTE_COLUMNS``.

    Raises ``MalformedFileError`` for unparsable XML, a root other than ``ownershipDocument``,
    a document type other than 4 or 4/A, a missing issuer CIK, period or owner CIK, and values
    that are not the numbers, dates or booleans their element requires.
    """
    if accession is not None and not _ACCESSION.match(accession):
        raise ValueError(f"not an accession number (0000000000-00-000000): {accession!r}")
    root = parse_xml(path)
    if local_name(root) != "ownershipDocument":
        raise MalformedFileError(
            path, f"root element is <{local_name(root)}>, expected <ownershipDocument>"
        )
    reader = _Form4Reader(path)
    header = reader.header(root, accession_from_file_name(path) or accession)
    return Form4Document(
        path=str(path),
        header=header,
        owners=typed_frame(
            [reader.owner(el) for el in iter_children(root, "reportingOwner")], OWNER_COLUMNS
        ),
        lines=typed_frame(reader.lines(root), LINE_COLUMNS),
        footnotes=typed_frame(reader.footnotes(root), FOOTNOTE_COLUMNS),
    )


class _Form4Reader:
    """Element-to-value conversions that name the file, element and line on failure."""

    def __init__(self, path: str | Path) -> None:
        self.path = path

    def _convert(
        self, converter: Callable[[str], Any], text: str | None, what: str, line: int | None
    ) -> Any:
        if text is None:
            return None
        try:
            return converter(text)
        except ValueError as exc:
            raise MalformedFileError(self.path, f"<{what}> at line {line}: {exc}") from exc

    def _date(self, text: str | None, what: str, line: int | None) -> dt.date | None:
        return self._convert(_parse_xs_date, text, what, line)

    def _date_of(self, element: etree._Element | None) -> dt.date | None:
        if element is None:
            return None
        return self._date(element_text(element), local_name(element), element.sourceline)

    def _number(self, field: ValueField, what: str) -> float | None:
        return self._convert(parse_number, field.value, what, field.sourceline)

    def _bool(self, element: etree._Element | None, *path: str) -> bool | None:
        target = find_child(element, *path)
        line = target.sourceline if target is not None else None
        return self._convert(parse_sec_bool, element_text(target), path[-1], line)

    def _cik(self, element: etree._Element | None, *path: str) -> str:
        target = find_child(element, *path)
        text = element_text(target)
        if text is None:
            raise MalformedFileError(self.path, f"missing <{'/'.join(path)}>")
        return self._convert(pad_cik, text, path[-1], target.sourceline)

    def header(self, root: etree._Element, accession: str | None) -> Form4Header:
        document_type = child_text(root, "documentType")
        if document_type not in FORM4_DOCUMENT_TYPES:
            raise MalformedFileError(
                self.path, f"<documentType> is {document_type!r}, expected '4' or '4/A'"
            )
        period = self._date_of(find_child(root, "periodOfReport"))
        if period is None:
            raise MalformedFileError(self.path, "missing <periodOfReport>")
        return Form4Header(
            accession=accession,
            schema_version=child_text(root, "schemaVersion"),
            document_type=document_type,
            period_of_report=period,
            date_of_original_submission=self._date_of(find_child(root, "dateOfOriginalSubmission")),
            issuer_cik=self._cik(root, "issuer", "issuerCik"),
            issuer_name=child_text(root, "issuer", "issuerName"),
            issuer_ticker=child_text(root, "issuer", "issuerTradingSymbol"),
            aff10b5_one=self._bool(root, "aff10b5One"),
            not_subject_to_section16=self._bool(root, "notSubjectToSection16"),
            remarks=child_text(root, "remarks"),
            signature_date=self._date_of(find_child(root, "ownerSignature", "signatureDate")),
        )

    def owner(self, owner: etree._Element) -> dict[str, Any]:
        relationship = find_child(owner, "reportingOwnerRelationship")
        return {
            "owner_cik": self._cik(owner, "reportingOwnerId", "rptOwnerCik"),
            "owner_name": child_text(owner, "reportingOwnerId", "rptOwnerName"),
            "is_director": self._bool(relationship, "isDirector"),
            "is_officer": self._bool(relationship, "isOfficer"),
            "officer_title": child_text(relationship, "officerTitle"),
            "is_ten_percent_owner": self._bool(relationship, "isTenPercentOwner"),
            "is_other": self._bool(relationship, "isOther"),
            "other_text": child_text(relationship, "otherText"),
        }

    def lines(self, root: etree._Element) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for table_element, table_name, kinds in _TABLES:
            table = find_child(root, table_element)
            if table is None:
                continue
            # Children in document order: filers may interleave transactions and holdings.
            for line in table:
                kind = kinds.get(local_name(line))
                if kind is None:
                    continue
                row = self.line(line)
                rows.append(
                    {"table": table_name, "line_sequence": len(rows) + 1, "kind": kind, **row}
                )
        return rows

    def line(self, line: etree._Element) -> dict[str, Any]:
        def text(*path: str) -> str | None:
            return read_value_field(line, *path).value

        def number(*path: str) -> float | None:
            return self._number(read_value_field(line, *path), path[-1])

        def date(*path: str) -> dt.date | None:
            field = read_value_field(line, *path)
            return self._date(field.value, path[-1], field.sourceline)

        coding = find_child(line, "transactionCoding")
        ids = footnote_ids_in(line)
        return {
            "security_title": text("securityTitle"),
            "transaction_date": date("transactionDate"),
            "deemed_execution_date": date("deemedExecutionDate"),
            "transaction_form_type": child_text(coding, "transactionFormType"),
            "transaction_code": child_text(coding, "transactionCode"),
            "equity_swap_involved": self._bool(coding, "equitySwapInvolved"),
            "shares": number("transactionAmounts", "transactionShares"),
            "price_per_share": number("transactionAmounts", "transactionPricePerShare"),
            "acquired_disposed": text("transactionAmounts", "transactionAcquiredDisposedCode"),
            "shares_owned_following": number(
                "postTransactionAmounts", "sharesOwnedFollowingTransaction"
            ),
            "value_owned_following": number(
                "postTransactionAmounts", "valueOwnedFollowingTransaction"
            ),
            "direct_or_indirect": text("ownershipNature", "directOrIndirectOwnership"),
            "nature_of_ownership": text("ownershipNature", "natureOfOwnership"),
            "conversion_or_exercise_price": number("conversionOrExercisePrice"),
            "exercise_date": date("exerciseDate"),
            "expiration_date": date("expirationDate"),
            "underlying_title": text("underlyingSecurity", "underlyingSecurityTitle"),
            "underlying_shares": number("underlyingSecurity", "underlyingSecurityShares"),
            "footnote_ids": ",".join(ids) if ids else None,
        }

    def footnotes(self, root: etree._Element) -> list[dict[str, Any]]:
        container = find_child(root, "footnotes")
        if container is None:
            return []
        return [
            {"footnote_id": (note.get("id") or "").strip() or None, "text": element_text(note)}
            for note in iter_children(container, "footnote")
        ]


def _parse_xs_date(text: str) -> dt.date | None:
    match = _XS_DATE.match(text.strip())
    if not match:
        raise ValueError(f"not a YYYY-MM-DD date: {text!r}")
    return parse_iso_date(match.group(1))
