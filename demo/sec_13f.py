"""13F-HR: the cover page (``primary_doc.xml``) and the information table, as EDGAR has them.

The quirk SEC's rule creates: an information table filed before 2023-01-03 gives ``value`` in
thousands of dollars, one filed on or after it in dollars. ``Holding13F.value_usd`` is always in
dollars; this module converts (rounding half up to whole thousands) when the filing needs it.
The cover page's ``tableValueTotal`` is the sum of the row values as written, so the two
documents tie out exactly as real filings do.
"""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_UP, Decimal

from findata.demo.documents import Filing13F, Holding13F
from findata.demo.sec_xml_writer import (
    Element,
    element,
    escape_text,
    render_document,
    text_element,
)

THIRTEENF_FILER_NS = "http://www.sec.gov/edgar/thirteenffiler"
EDGAR_COMMON_NS = "http://www.sec.gov/edgar/common"
INFORMATION_TABLE_NS = "http://www.sec.gov/edgar/document/thirteenf/informationtable"

#: schema version of the cover page (current EDGAR 13F schema)
COVER_SCHEMA_VERSION = "X0202"
_INFO_PREFIX = "ns1"  # the prefix SEC's own information-table writer uses


def sec_13f_date(value: dt.date) -> str:
    """A date as 13F cover pages write it: ``MM-DD-YYYY``."""
    return value.strftime("%m-%d-%Y")


def reported_value(filing: Filing13F, value_usd: int) -> int:
    """The number written in ``<value>``: dollars, or thousands (half up) before 2023-01-03."""
    if value_usd < 0:
        raise ValueError(f"13F {filing.accession}: negative value {value_usd}")
    if not filing.values_in_thousands:
        return value_usd
    if isinstance(value_usd, int):
        return (value_usd + 500) // 1000  # half up, in integers (Decimal costs more per row)
    return int((Decimal(value_usd) / 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def table_value_total(filing: Filing13F) -> int:
    """``tableValueTotal``: the sum of the row values as written (same unit as the rows)."""
    return sum(reported_value(filing, holding.value_usd) for holding in filing.holdings)


def form13f_file_number(filing: Filing13F) -> str:
    """The manager's 13F file number; when the record has none, ``028-`` and CIK digits."""
    if filing.form13f_file_number:
        return filing.form13f_file_number
    return f"028-{int(filing.manager_cik) % 100000:05d}"


def _amendment_parts(filing: Filing13F) -> list[Element | None]:
    if not filing.amendment_number:
        return [text_element("isAmendment", "false")]
    return [
        text_element("isAmendment", "true"),
        text_element("amendmentNo", str(filing.amendment_number)),
        element(
            "amendmentInfo",
            text_element("amendmentType", filing.amendment_type or "RESTATEMENT"),
            text_element("confDeniedExpired", "false"),
        ),
    ]


def form13f_primary_doc_xml(filing: Filing13F) -> bytes:
    """The 13F-HR (or 13F-HR/A) cover page ``edgarSubmission``, UTF-8 bytes.

    Signed on the filing date; ``tableValueTotal`` follows the thousands rule.
    """
    address = filing.manager_address
    period = sec_13f_date(filing.period)
    root = element(
        "edgarSubmission",
        text_element("schemaVersion", COVER_SCHEMA_VERSION),
        element(
            "headerData",
            text_element("submissionType", filing.form_type),
            element(
                "filerInfo",
                text_element("liveTestFlag", "LIVE"),
                element(
                    "flags",
                    text_element("confirmingCopyFlag", "false"),
                    text_element("returnCopyFlag", "false"),
                    text_element("overrideInternetFlag", "false"),
                ),
                element(
                    "filer",
                    element(
                        "credentials",
                        text_element("cik", filing.manager_cik),
                        text_element("ccc", "XXXXXXXX"),
                    ),
                ),
                text_element("periodOfReport", period),
            ),
        ),
        element(
            "formData",
            element(
                "coverPage",
                text_element("reportCalendarOrQuarter", period),
                *_amendment_parts(filing),
                element(
                    "filingManager",
                    text_element("name", filing.manager_name),
                    element(
                        "address",
                        text_element("com:street1", address.street1),
                        text_element("com:street2", address.street2) if address.street2 else None,
                        text_element("com:city", address.city),
                        text_element("com:stateOrCountry", address.state),
                        text_element("com:zipCode", address.zip_code),
                    ),
                ),
                text_element("reportType", "13F HOLDINGS REPORT"),
                text_element("form13FFileNumber", form13f_file_number(filing)),
                text_element("provideInfoForInstruction5", "N"),
            ),
            element(
                "signatureBlock",
                text_element("name", filing.signer_name),
                text_element("title", filing.signer_title),
                text_element("phone", filing.signer_phone),
                text_element("signature", f"/s/ {filing.signer_name}"),
                text_element("city", address.city),
                text_element("stateOrCountry", address.state),
                text_element("signatureDate", sec_13f_date(filing.filed)),
            ),
            element(
                "summaryPage",
                text_element("otherIncludedManagersCount", "0"),
                text_element("tableEntryTotal", str(len(filing.holdings))),
                text_element("tableValueTotal", str(table_value_total(filing))),
                text_element("isConfidentialOmitted", "false"),
            ),
        ),
        attrs={"xmlns": THIRTEENF_FILER_NS, "xmlns:com": EDGAR_COMMON_NS},
    )
    return render_document('<?xml version="1.0" encoding="UTF-8"?>', root, "  ")


def _info_row_lines(filing: Filing13F, holding: Holding13F) -> str:
    """One ``infoTable`` row as ``render_document`` lays it out at level 1 (four-space indent),
    written as text directly: building an element tree for each of the large demo's hundreds of
    thousands of rows cost more than the rest of the table. Numbers need no escaping."""
    p = _INFO_PREFIX
    figi = f"        <{p}:figi>{escape_text(holding.figi)}</{p}:figi>\n" if holding.figi else ""
    put_call = (
        f"        <{p}:putCall>{escape_text(holding.put_call)}</{p}:putCall>\n"
        if holding.put_call
        else ""
    )
    other = (
        f"        <{p}:otherManager>{escape_text(holding.other_manager)}</{p}:otherManager>\n"
        if holding.other_manager
        else ""
    )
    return (
        f"    <{p}:infoTable>\n"
        f"        <{p}:nameOfIssuer>{escape_text(holding.name_of_issuer)}</{p}:nameOfIssuer>\n"
        f"        <{p}:titleOfClass>{escape_text(holding.title_of_class)}</{p}:titleOfClass>\n"
        f"        <{p}:cusip>{escape_text(holding.cusip)}</{p}:cusip>\n"
        f"{figi}"
        f"        <{p}:value>{reported_value(filing, holding.value_usd)}</{p}:value>\n"
        f"        <{p}:shrsOrPrnAmt>\n"
        f"            <{p}:sshPrnamt>{holding.shares}</{p}:sshPrnamt>\n"
        f"            <{p}:sshPrnamtType>{escape_text(holding.sh_prn)}</{p}:sshPrnamtType>\n"
        f"        </{p}:shrsOrPrnAmt>\n"
        f"{put_call}"
        f"        <{p}:investmentDiscretion>{escape_text(holding.investment_discretion)}"
        f"</{p}:investmentDiscretion>\n"
        f"{other}"
        f"        <{p}:votingAuthority>\n"
        f"            <{p}:Sole>{holding.voting_sole}</{p}:Sole>\n"
        f"            <{p}:Shared>{holding.voting_shared}</{p}:Shared>\n"
        f"            <{p}:None>{holding.voting_none}</{p}:None>\n"
        f"        </{p}:votingAuthority>\n"
        f"    </{p}:infoTable>\n"
    )


def form13f_information_table_xml(filing: Filing13F) -> bytes:
    """The 13F information table (``ns1:informationTable``), UTF-8 bytes, rows in record order.

    ``value`` is in thousands of dollars when ``filing.values_in_thousands``, else dollars.
    """
    # the same bytes render_document gives for the element tree of the rows
    root = f"{_INFO_PREFIX}:informationTable"
    text = "".join(
        [
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n',
            f'<{root} xmlns:{_INFO_PREFIX}="{escape_text(INFORMATION_TABLE_NS)}">\n',
            *(_info_row_lines(filing, holding) for holding in filing.holdings),
            f"</{root}>\n",
        ]
    )
    return text.encode("utf-8")
