"""Form 4 / 4/A as the ``ownershipDocument`` XML EDGAR serves (element order of schema X0508).

Where a line's footnotes go: on a transaction they are attached to the price per share (as
filers attach the weighted-average-price footnote), on a holding to the shares owned. A field
with no value (price, conversion price, exercise or expiration date) is written footnote-only
(``<footnoteId>`` and no ``<value>``), the way filers point to an explanation instead of a
number; with no footnote on the line it is written empty.
"""

from __future__ import annotations

import datetime as dt

from findata.demo.documents import (
    DerivativeLine,
    Form4Filing,
    NonDerivativeLine,
    ReportingOwner,
)
from findata.demo.sec_xml_writer import (
    Element,
    element,
    format_decimal,
    render_document,
    sec_bool,
    text_element,
)

#: decimals written for prices; Form 4 prices are quoted to 4 places at most
PRICE_PLACES = 4
#: decimals written for share amounts (deferred stock units come in fractions)
SHARE_PLACES = 6


def _footnote_refs(footnote_ids: tuple[str, ...]) -> tuple[Element, ...]:
    return tuple(element("footnoteId", attrs={"id": fid}) for fid in footnote_ids)


def _value(tag: str, text: str, footnote_ids: tuple[str, ...] = ()) -> Element:
    """``<tag><value>text</value><footnoteId …/></tag>``."""
    return element(tag, text_element("value", text), *_footnote_refs(footnote_ids))


def _optional_value(tag: str, text: str | None, footnote_ids: tuple[str, ...]) -> Element:
    """A value field that may be missing: footnote-only, or empty without a footnote."""
    if text is not None:
        return _value(tag, text, footnote_ids)
    if footnote_ids:
        return element(tag, *_footnote_refs(footnote_ids))
    return text_element(tag, "")


def _value_or_footnotes(tag: str, text: str | None, footnote_ids: tuple[str, ...]) -> Element:
    """A plain value when there is one; else the line's footnotes explain its absence."""
    return _value(tag, text) if text is not None else _optional_value(tag, None, footnote_ids)


def _price(value: float | None) -> str | None:
    return None if value is None else format_decimal(value, PRICE_PLACES)


def _shares(value: float) -> str:
    return format_decimal(value, SHARE_PLACES)


def _date(value: dt.date | None) -> str | None:
    return None if value is None else value.isoformat()


def _reporting_owner(owner: ReportingOwner, style: str) -> Element:
    address = owner.address
    return element(
        "reportingOwner",
        element(
            "reportingOwnerId",
            text_element("rptOwnerCik", owner.cik),
            text_element("rptOwnerName", owner.name),
        ),
        element(
            "reportingOwnerAddress",
            text_element("rptOwnerStreet1", address.street1),
            text_element("rptOwnerStreet2", address.street2) if address.street2 else None,
            text_element("rptOwnerCity", address.city),
            text_element("rptOwnerState", address.state),
            text_element("rptOwnerZipCode", address.zip_code),
            text_element("rptOwnerStateDescription", ""),
        ),
        element(
            "reportingOwnerRelationship",
            text_element("isDirector", sec_bool(owner.is_director, style)),
            text_element("isOfficer", sec_bool(owner.is_officer, style)),
            text_element("isTenPercentOwner", sec_bool(owner.is_ten_percent_owner, style)),
            text_element("isOther", sec_bool(owner.is_other, style)),
            text_element("officerTitle", owner.officer_title)
            if owner.is_officer and owner.officer_title
            else None,
        ),
    )


def _transaction_coding(code: str, style: str) -> Element:
    return element(
        "transactionCoding",
        text_element("transactionFormType", "4"),
        text_element("transactionCode", code),
        text_element("equitySwapInvolved", sec_bool(False, style)),
    )


def _ownership_nature(direct_or_indirect: str, nature: str | None) -> Element:
    return element(
        "ownershipNature",
        _value("directOrIndirectOwnership", direct_or_indirect),
        _value("natureOfOwnership", nature) if nature else None,
    )


def _non_derivative_line(line: NonDerivativeLine, style: str) -> Element:
    if line.transaction_code is None:
        return element(
            "nonDerivativeHolding",
            _value("securityTitle", line.security_title),
            element(
                "postTransactionAmounts",
                _value(
                    "sharesOwnedFollowingTransaction",
                    _shares(line.shares_owned_following),
                    line.footnote_ids,
                ),
            ),
            _ownership_nature(line.direct_or_indirect, line.nature_of_ownership),
        )
    if line.transaction_date is None or line.shares is None or line.acquired_disposed is None:
        raise ValueError(
            f"transaction line {line.security_title!r} needs a date, shares and A/D code"
        )
    return element(
        "nonDerivativeTransaction",
        _value("securityTitle", line.security_title),
        _value("transactionDate", line.transaction_date.isoformat()),
        _transaction_coding(line.transaction_code, style),
        element(
            "transactionAmounts",
            _value("transactionShares", _shares(line.shares)),
            _optional_value(
                "transactionPricePerShare", _price(line.price_per_share), line.footnote_ids
            ),
            _value("transactionAcquiredDisposedCode", line.acquired_disposed),
        ),
        element(
            "postTransactionAmounts",
            _value("sharesOwnedFollowingTransaction", _shares(line.shares_owned_following)),
        ),
        _ownership_nature(line.direct_or_indirect, line.nature_of_ownership),
    )


def _derivative_line(line: DerivativeLine, style: str) -> Element:
    notes = line.footnote_ids
    return element(
        "derivativeTransaction",
        _value("securityTitle", line.security_title),
        _value_or_footnotes(
            "conversionOrExercisePrice", _price(line.conversion_or_exercise_price), notes
        ),
        _value("transactionDate", line.transaction_date.isoformat()),
        _transaction_coding(line.transaction_code, style),
        element(
            "transactionAmounts",
            _value("transactionShares", _shares(line.shares)),
            _optional_value("transactionPricePerShare", _price(line.price_per_share), notes),
            _value("transactionAcquiredDisposedCode", line.acquired_disposed),
        ),
        _value_or_footnotes("exerciseDate", _date(line.exercise_date), notes),
        _value_or_footnotes("expirationDate", _date(line.expiration_date), notes),
        element(
            "underlyingSecurity",
            _value("underlyingSecurityTitle", line.underlying_title),
            _value("underlyingSecurityShares", _shares(line.underlying_shares)),
        ),
        element(
            "postTransactionAmounts",
            _value("sharesOwnedFollowingTransaction", _shares(line.shares_owned_following)),
        ),
        _ownership_nature(line.direct_or_indirect, None),
    )


def _non_derivative_rows(lines: tuple[NonDerivativeLine, ...], style: str) -> list[Element]:
    """Table I rows: the schema puts every transaction before every holding."""
    transactions = [line for line in lines if line.transaction_code is not None]
    holdings = [line for line in lines if line.transaction_code is None]
    return [_non_derivative_line(line, style) for line in transactions + holdings]


def _check_footnote_references(filing: Form4Filing) -> None:
    """Every ``footnoteId`` written must name a footnote of the document (EDGAR rejects it)."""
    defined = {fid for fid, _ in filing.footnotes}
    lines: list[NonDerivativeLine | DerivativeLine] = [*filing.non_derivative, *filing.derivative]
    for line in lines:
        unknown = sorted(set(line.footnote_ids) - defined)
        if unknown:
            raise ValueError(
                f"Form 4 {filing.accession}: line {line.security_title!r} refers to "
                f"undefined footnotes {unknown}"
            )


def form4_xml(filing: Form4Filing) -> bytes:
    """The Form 4 (or 4/A) ``ownershipDocument`` for ``filing``, UTF-8 bytes.

    Same record, same bytes. Booleans follow ``filing.boolean_style``; a 4/A carries
    ``dateOfOriginalSubmission``; every reporting owner signs on the filing date.
    """
    if not filing.owners:
        raise ValueError(f"Form 4 {filing.accession} has no reporting owner")
    style = filing.boolean_style
    sec_bool(False, style)  # reject an unknown style before building anything
    _check_footnote_references(filing)
    root = element(
        "ownershipDocument",
        text_element("schemaVersion", filing.schema_version),
        text_element("documentType", filing.document_type),
        text_element("periodOfReport", filing.period_of_report.isoformat()),
        text_element("dateOfOriginalSubmission", filing.amendment_of.isoformat())
        if filing.amendment_of
        else None,
        text_element("notSubjectToSection16", sec_bool(False, style)),
        element(
            "issuer",
            text_element("issuerCik", filing.issuer_cik),
            text_element("issuerName", filing.issuer_name),
            text_element("issuerTradingSymbol", filing.issuer_ticker),
        ),
        *(_reporting_owner(owner, style) for owner in filing.owners),
        text_element("aff10b5One", sec_bool(filing.aff10b5_one, style))
        if filing.aff10b5_one is not None
        else None,
        element("nonDerivativeTable", *_non_derivative_rows(filing.non_derivative, style))
        if filing.non_derivative
        else None,
        element("derivativeTable", *(_derivative_line(line, style) for line in filing.derivative))
        if filing.derivative
        else None,
        element(
            "footnotes",
            *(Element("footnote", (), text, (("id", fid),)) for fid, text in filing.footnotes),
        )
        if filing.footnotes
        else None,
        text_element("remarks", filing.remarks) if filing.remarks else None,
        *(
            element(
                "ownerSignature",
                text_element("signatureName", f"/s/ {owner.name}"),
                text_element("signatureDate", filing.filed.isoformat()),
            )
            for owner in filing.owners
        ),
    )
    return render_document('<?xml version="1.0"?>', root, "    ", blank_line_between_top_level=True)
