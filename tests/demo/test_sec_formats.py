"""The demo's SEC serializers write what real SEC files look like, byte-deterministically.

Shapes are checked against the real filings in tests/fixtures (element paths, sibling order,
namespaces); the JSON writers must reproduce slices of real data.sec.gov files byte for byte.
Round trips through the readers (sources/readers) close the loop where they exist.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from findata.demo.documents import (
    Address,
    CompanyFacts,
    DerivativeLine,
    Fact,
    Filing13F,
    FilingIndexEntry,
    Form4Filing,
    FormerName,
    Holding13F,
    NonDerivativeLine,
    ReportingOwner,
    Submissions,
)
from findata.demo.sec_formats import (
    companyfacts_file_name,
    companyfacts_json,
    form4_file_name,
    form4_xml,
    form13f_file_names,
    form13f_information_table_xml,
    form13f_primary_doc_xml,
    reported_value,
    submissions_file_name,
    submissions_json,
    table_value_total,
)
from findata.demo.sec_xml_writer import format_decimal

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FORM4 = FIXTURES / "form4"
THIRTEEN_F = FIXTURES / "13f"
XBRL_JSON = FIXTURES / "xbrl-json"

FILER_NS = "http://www.sec.gov/edgar/thirteenffiler"
COMMON_NS = "http://www.sec.gov/edgar/common"
INFO_NS = "http://www.sec.gov/edgar/document/thirteenf/informationtable"

# Real X0508/X0407 Form 4s: 1/0 and true/false booleans, holdings, derivative lines, officer.
REAL_FORM4 = [
    FORM4 / "0001321655-24-000181_wk-form4_1727395357.xml",
    FORM4 / "0000950170-24-012830_ownership.xml",
    FORM4 / "374water_374WaterForm4.xml",
    FORM4 / "0001441816-23-000153_wf-form4_168910627474492.xml",
]
REAL_13F_COVERS = [
    THIRTEEN_F / "bard-financial-services_2021q3" / "primary_doc.xml",
    THIRTEEN_F / "mfn-partners_2025q4_13F-HR-A" / "primary_doc.xml",
    THIRTEEN_F / "metlife_2021q4" / "primary_doc.xml",
]
REAL_13F_TABLES = [
    THIRTEEN_F / "bard-financial-services_2021q3" / "infotable.xml",
    THIRTEEN_F / "mfn-partners_2025q4_13F-HR-A" / "infotable.xml",
]


# --------------------------------------------------------------------------------------------
# helpers


def parse(data: bytes) -> etree._Element:
    """Parse with the hardened settings every reader uses (the bytes must be well formed)."""
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False
    )
    return etree.fromstring(data, parser=parser)


def parse_file(path: Path) -> etree._Element:
    return parse(path.read_bytes())


def _children(node: etree._Element) -> list[etree._Element]:
    return [child for child in node if isinstance(child.tag, str)]


Path_ = tuple[str, ...]


def element_paths(root: etree._Element) -> set[Path_]:
    """Every element path (tuple of Clark-notation names, root first) in the document."""
    paths: set[Path_] = set()

    def walk(node: etree._Element, prefix: Path_) -> None:
        path = (*prefix, node.tag)
        paths.add(path)
        for child in _children(node):
            walk(child, path)

    walk(root, ())
    return paths


def sibling_precedence(root: etree._Element) -> dict[Path_, set[tuple[str, str]]]:
    """Per parent path, every (a, b) such that some child ``a`` comes before a child ``b``."""
    pairs: dict[Path_, set[tuple[str, str]]] = defaultdict(set)

    def walk(node: etree._Element, path: Path_) -> None:
        tags = [child.tag for child in _children(node)]
        for i, first in enumerate(tags):
            for second in tags[i + 1 :]:
                if first != second:
                    pairs[path].add((first, second))
        for child in _children(node):
            walk(child, (*path, child.tag))

    walk(root, (root.tag,))
    return pairs


def assert_shaped_like(ours: etree._Element, reals: list[etree._Element], skip: set[str]) -> None:
    """Our element paths all occur in the real files and siblings keep the real files' order.

    ``skip`` names local tags that no stored real file has (checked on their own instead).
    """
    real_paths = set().union(*(element_paths(real) for real in reals))
    real_pairs: dict[Path_, set[tuple[str, str]]] = defaultdict(set)
    for real in reals:
        for parent, pairs in sibling_precedence(real).items():
            real_pairs[parent] |= pairs
    checked = 0
    for path in element_paths(ours):
        if etree.QName(path[-1]).localname in skip:
            continue
        assert path in real_paths, f"{'/'.join(path)} occurs in no real file"
        checked += 1
    assert checked > 10
    for parent, pairs in sibling_precedence(ours).items():
        for first, second in pairs:
            reversed_in_real = (second, first) in real_pairs[parent]
            same_in_real = (first, second) in real_pairs[parent]
            assert same_in_real or not reversed_in_real, (
                f"under {'/'.join(parent)}: {first} before {second}, real files have the "
                "opposite order"
            )


def text_at(root: etree._Element, path: str, ns: dict[str, str] | None = None) -> str | None:
    found = root.find(path, ns)
    assert found is not None, f"no {path}"
    return found.text


# --------------------------------------------------------------------------------------------
# Form 4 records

OWNER_ADDRESS = Address("C/O ACME ROBOTICS INC.", "DENVER", "CO", "80202", street2="FLOOR 15")


def form4_record(**changes: Any) -> Form4Filing:
    """A Form 4 with a sale, a holding, a gift without price and an option exercise."""
    filing = Form4Filing(
        accession="0001234567-24-000123",
        filed=dt.date(2024, 9, 26),
        period_of_report=dt.date(2024, 9, 24),
        issuer_cik="0001321655",
        issuer_name='Acme "Robotics" & Co.',
        issuer_ticker="ACME",
        owners=(
            ReportingOwner(
                cik="0001211060",
                name="DOE JANE",
                address=OWNER_ADDRESS,
                is_director=True,
                is_officer=True,
                officer_title="Chief Financial Officer",
            ),
        ),
        non_derivative=(
            # The holding first: the serializer must still put it after every transaction.
            NonDerivativeLine(
                "Class A Common Stock",
                15733625.0,
                "I",
                nature_of_ownership="See Footnote",
                footnote_ids=("F3",),
            ),
            NonDerivativeLine(
                "Class A Common Stock",
                55636551.0,
                "D",
                transaction_date=dt.date(2024, 9, 24),
                transaction_code="S",
                shares=7214637.0,
                price_per_share=36.85670,
                acquired_disposed="D",
                footnote_ids=("F1",),
            ),
            NonDerivativeLine(
                "Class A Common Stock",
                55635610.0,
                "D",
                transaction_date=dt.date(2024, 9, 25),
                transaction_code="G",
                shares=941.0,
                price_per_share=None,
                acquired_disposed="D",
                footnote_ids=("F2",),
            ),
        ),
        derivative=(
            DerivativeLine(
                security_title="Stock Option (right to buy)",
                conversion_or_exercise_price=0.33,
                transaction_date=dt.date(2024, 9, 24),
                transaction_code="M",
                shares=196.356,
                price_per_share=None,
                acquired_disposed="D",
                exercise_date=None,
                expiration_date=dt.date(2035, 4, 29),
                underlying_title="Class A Common Stock",
                underlying_shares=196.356,
                shares_owned_following=12629.042,
                direct_or_indirect="D",
                footnote_ids=("F4",),
            ),
        ),
        footnotes=(
            ("F1", "Weighted average price; sales from $36.44 to $37.40."),
            ("F2", "Gift to a charity, no consideration."),
            ("F3", "Held by Rivendell 7 LLC."),
            ("F4", "The option vests in four equal annual installments."),
        ),
        remarks='Prices are "weighted averages".',
        aff10b5_one=True,
        boolean_style="1/0",
    )
    return dataclasses.replace(filing, **changes)


# --------------------------------------------------------------------------------------------
# Form 4


def test_form4_has_the_element_paths_and_order_of_real_x0508_filings() -> None:
    ours = parse(form4_xml(form4_record()))
    reals = [parse_file(path) for path in REAL_FORM4]
    assert_shaped_like(ours, reals, skip=set())
    amended = parse(form4_xml(form4_record(amendment_of=dt.date(2024, 9, 26))))
    # No real 4/A is stored (SOURCES.md); dateOfOriginalSubmission is checked on its own below.
    assert_shaped_like(amended, reals, skip={"dateOfOriginalSubmission"})


def test_form4_opens_like_the_documents_edgar_serves() -> None:
    real = (FORM4 / "0001321655-24-000181_wk-form4_1727395357.xml").read_bytes()
    ours = form4_xml(form4_record())
    # Declaration, root, blank lines between top-level elements, 4-space indent.
    opening = real.split(b"<periodOfReport>")[0]
    assert ours.startswith(opening)
    assert ours.endswith(b"</ownershipDocument>\n")


def test_form4_writes_the_records_values() -> None:
    root = parse(form4_xml(form4_record()))
    assert text_at(root, "schemaVersion") == "X0508"
    assert text_at(root, "documentType") == "4"
    assert text_at(root, "periodOfReport") == "2024-09-24"
    assert root.find("dateOfOriginalSubmission") is None
    assert text_at(root, "notSubjectToSection16") == "0"
    assert text_at(root, "issuer/issuerCik") == "0001321655"
    assert text_at(root, "issuer/issuerName") == 'Acme "Robotics" & Co.'
    assert text_at(root, "issuer/issuerTradingSymbol") == "ACME"
    owner = root.find("reportingOwner")
    assert text_at(owner, "reportingOwnerId/rptOwnerCik") == "0001211060"
    assert text_at(owner, "reportingOwnerId/rptOwnerName") == "DOE JANE"
    assert text_at(owner, "reportingOwnerAddress/rptOwnerStreet2") == "FLOOR 15"
    assert text_at(owner, "reportingOwnerAddress/rptOwnerZipCode") == "80202"
    relationship = owner.find("reportingOwnerRelationship")
    assert [(c.tag, c.text) for c in relationship] == [
        ("isDirector", "1"),
        ("isOfficer", "1"),
        ("isTenPercentOwner", "0"),
        ("isOther", "0"),
        ("officerTitle", "Chief Financial Officer"),
    ]
    assert text_at(root, "aff10b5One") == "1"

    table = root.find("nonDerivativeTable")
    assert [c.tag for c in table] == [
        "nonDerivativeTransaction",
        "nonDerivativeTransaction",
        "nonDerivativeHolding",
    ]
    sale, gift, holding = list(table)
    assert text_at(sale, "transactionDate/value") == "2024-09-24"
    assert text_at(sale, "transactionCoding/transactionFormType") == "4"
    assert text_at(sale, "transactionCoding/transactionCode") == "S"
    assert text_at(sale, "transactionCoding/equitySwapInvolved") == "0"
    assert text_at(sale, "transactionAmounts/transactionShares/value") == "7214637"
    price = sale.find("transactionAmounts/transactionPricePerShare")
    assert [(c.tag, c.text, c.get("id")) for c in price] == [
        ("value", "36.8567", None),
        ("footnoteId", None, "F1"),
    ]
    assert text_at(sale, "transactionAmounts/transactionAcquiredDisposedCode/value") == "D"
    assert (
        text_at(sale, "postTransactionAmounts/sharesOwnedFollowingTransaction/value") == "55636551"
    )
    assert text_at(sale, "ownershipNature/directOrIndirectOwnership/value") == "D"
    # No price: footnote-only, just the reference and no <value>.
    gift_price = gift.find("transactionAmounts/transactionPricePerShare")
    assert [(c.tag, c.get("id")) for c in gift_price] == [("footnoteId", "F2")]
    assert text_at(holding, "securityTitle/value") == "Class A Common Stock"
    held = holding.find("postTransactionAmounts/sharesOwnedFollowingTransaction")
    assert [(c.tag, c.text, c.get("id")) for c in held] == [
        ("value", "15733625", None),
        ("footnoteId", None, "F3"),
    ]
    assert text_at(holding, "ownershipNature/natureOfOwnership/value") == "See Footnote"

    option = root.find("derivativeTable/derivativeTransaction")
    assert text_at(option, "conversionOrExercisePrice/value") == "0.33"
    assert text_at(option, "transactionCoding/transactionCode") == "M"
    assert text_at(option, "transactionAmounts/transactionShares/value") == "196.356"
    assert option.find("transactionAmounts/transactionPricePerShare/value") is None
    assert option.find("transactionAmounts/transactionPricePerShare/footnoteId").get("id") == "F4"
    assert option.find("exerciseDate/value") is None
    assert option.find("exerciseDate/footnoteId").get("id") == "F4"
    assert text_at(option, "expirationDate/value") == "2035-04-29"
    assert (
        text_at(option, "underlyingSecurity/underlyingSecurityTitle/value")
        == "Class A Common Stock"
    )
    assert text_at(option, "underlyingSecurity/underlyingSecurityShares/value") == "196.356"
    assert (
        text_at(option, "postTransactionAmounts/sharesOwnedFollowingTransaction/value")
        == "12629.042"
    )

    assert [(n.get("id"), n.text) for n in root.find("footnotes")] == list(form4_record().footnotes)
    assert text_at(root, "remarks") == 'Prices are "weighted averages".'
    assert text_at(root, "ownerSignature/signatureName") == "/s/ DOE JANE"
    assert text_at(root, "ownerSignature/signatureDate") == "2024-09-26"


def test_form4_escapes_quotes_as_edgar_does() -> None:
    # The real Palantir remarks write '"' as &quot; and leave apostrophes alone.
    real = (FORM4 / "0001321655-24-000181_wk-form4_1727395357.xml").read_bytes()
    assert b"&quot;Security Ownership" in real
    ours = form4_xml(form4_record())
    assert b"<issuerName>Acme &quot;Robotics&quot; &amp; Co.</issuerName>" in ours
    assert b"<remarks>Prices are &quot;weighted averages&quot;.</remarks>" in ours


def test_form4_true_false_booleans() -> None:
    root = parse(form4_xml(form4_record(boolean_style="true/false", aff10b5_one=False)))
    booleans = [
        "notSubjectToSection16",
        "reportingOwner/reportingOwnerRelationship/isDirector",
        "reportingOwner/reportingOwnerRelationship/isOfficer",
        "reportingOwner/reportingOwnerRelationship/isTenPercentOwner",
        "reportingOwner/reportingOwnerRelationship/isOther",
        "aff10b5One",
        "nonDerivativeTable/nonDerivativeTransaction/transactionCoding/equitySwapInvolved",
        "derivativeTable/derivativeTransaction/transactionCoding/equitySwapInvolved",
    ]
    assert [text_at(root, path) for path in booleans] == [
        "false",
        "true",
        "true",
        "false",
        "false",
        "false",
        "false",
        "false",
    ]


def test_form4_amendment_is_a_4a_with_the_original_date_after_the_period() -> None:
    root = parse(form4_xml(form4_record(amendment_of=dt.date(2024, 9, 26))))
    assert text_at(root, "documentType") == "4/A"
    assert text_at(root, "dateOfOriginalSubmission") == "2024-09-26"
    tags = [c.tag for c in root]
    position = tags.index("dateOfOriginalSubmission")
    assert tags[position - 1] == "periodOfReport"
    assert tags[position + 1] == "notSubjectToSection16"


def test_form4_leaves_out_aff10b5one_and_empty_tables_when_unset() -> None:
    record = form4_record(aff10b5_one=None, derivative=(), footnotes=(), remarks=None)
    record = dataclasses.replace(
        record,
        non_derivative=tuple(
            dataclasses.replace(line, footnote_ids=()) for line in record.non_derivative
        ),
    )
    root = parse(form4_xml(record))
    for tag in ("aff10b5One", "derivativeTable", "footnotes", "remarks"):
        assert root.find(tag) is None, tag
    # A missing price with no footnote to explain it is an empty element.
    gift_price = root.findall("nonDerivativeTable/nonDerivativeTransaction")[1].find(
        "transactionAmounts/transactionPricePerShare"
    )
    assert len(gift_price) == 0 and not gift_price.text
    assert b"<transactionPricePerShare></transactionPricePerShare>" in form4_xml(record)


def test_form4_one_owner_signature_per_owner_in_owner_order() -> None:
    second = ReportingOwner("0001552273", "Mithril LP", OWNER_ADDRESS, is_ten_percent_owner=True)
    record = form4_record(owners=(*form4_record().owners, second))
    root = parse(form4_xml(record))
    assert [text_at(o, "reportingOwnerId/rptOwnerCik") for o in root.findall("reportingOwner")] == [
        "0001211060",
        "0001552273",
    ]
    assert [s.findtext("signatureName") for s in root.findall("ownerSignature")] == [
        "/s/ DOE JANE",
        "/s/ Mithril LP",
    ]
    assert root.findall("reportingOwner")[1].find("reportingOwnerRelationship/officerTitle") is None


def test_form4_rejects_what_edgar_would_reject() -> None:
    with pytest.raises(ValueError, match="undefined footnotes"):
        form4_xml(form4_record(footnotes=(("F1", "only one"),)))
    with pytest.raises(ValueError, match="boolean style"):
        form4_xml(form4_record(boolean_style="yes/no"))
    with pytest.raises(ValueError, match="no reporting owner"):
        form4_xml(form4_record(owners=()))


def test_form4_is_deterministic() -> None:
    first = form4_xml(form4_record())
    again = form4_xml(form4_record())  # an equal, separately built record
    assert first == again
    assert first == form4_xml(form4_record())


@pytest.mark.parametrize(
    ("value", "places", "expected"),
    [
        (15.0, 4, "15"),
        (15, 4, "15"),
        (36.85670, 4, "36.8567"),
        (0.33, 4, "0.33"),
        (12.34565, 4, "12.3457"),  # half up, from the shortest repr (not 12.345649999…)
        (0.1 + 0.2, 4, "0.3"),
        (1e-05, 4, "0"),
        (-0.0, 4, "0"),
        (1e16, 4, "10000000000000000"),
        (196.356, 6, "196.356"),
        (7214637.0, 6, "7214637"),
    ],
)
def test_numbers_have_no_float_noise(value: float, places: int, expected: str) -> None:
    assert format_decimal(value, places) == expected


def test_numbers_reject_nan() -> None:
    with pytest.raises(ValueError):
        format_decimal(math.nan, 4)


# --------------------------------------------------------------------------------------------
# 13F records

MANAGER_ADDRESS = Address("222 BERKELEY STREET, 13TH FLOOR", "BOSTON", "MA", "02116")


def filing_13f(filed: dt.date, **changes: Any) -> Filing13F:
    """A 13F-HR with values chosen to show the half-up rounding to thousands."""
    filing = Filing13F(
        accession="0000904454-23-000001",
        filed=filed,
        period=dt.date(2022, 9, 30),
        manager_cik="0001732811",
        manager_name="MFN Partners Management, LP",
        manager_address=MANAGER_ADDRESS,
        signer_name="Jon Reisman",
        holdings=(
            Holding13F(
                "RICE ACQUISITION CORP 3",
                "ORD SHS CL A",
                "G7553X106",
                value_usd=24_600_500,
                shares=2_400_000,
                voting_sole=2_400_000,
                figi="BBG01X0FFN50",
            ),
            Holding13F(
                "3M CO COM",
                "COM",
                "88579Y101",
                value_usd=583_499,
                shares=3326,
                investment_discretion="DFND",
                other_manager="1",
                voting_none=3326,
            ),
            Holding13F(
                "ABBOTT LABS COM",
                "COM",
                "002824100",
                value_usd=1_500,
                shares=12,
                voting_shared=12,
            ),
        ),
    )
    return dataclasses.replace(filing, **changes)


BEFORE_DOLLARS = dt.date(2023, 1, 2)
FIRST_DOLLARS_DAY = dt.date(2023, 1, 3)
NS = {"f": FILER_NS, "c": COMMON_NS, "t": INFO_NS}


# --------------------------------------------------------------------------------------------
# 13F


def test_13f_cover_has_the_element_paths_and_order_of_real_covers() -> None:
    reals = [parse_file(path) for path in REAL_13F_COVERS]
    assert_shaped_like(parse(form13f_primary_doc_xml(filing_13f(FIRST_DOLLARS_DAY))), reals, set())
    amended = filing_13f(FIRST_DOLLARS_DAY, amendment_number=1, amendment_type="NEW HOLDINGS")
    assert_shaped_like(parse(form13f_primary_doc_xml(amended)), reals, set())


def test_13f_information_table_has_the_element_paths_and_order_of_real_tables() -> None:
    reals = [parse_file(path) for path in REAL_13F_TABLES]
    ours = parse(form13f_information_table_xml(filing_13f(FIRST_DOLLARS_DAY)))
    assert_shaped_like(ours, reals, set())
    # No stored real table has <putCall>; the schema puts it between shrsOrPrnAmt and
    # investmentDiscretion.
    call = filing_13f(
        FIRST_DOLLARS_DAY,
        holdings=(dataclasses.replace(filing_13f(FIRST_DOLLARS_DAY).holdings[0], put_call="Call"),),
    )
    row = parse(form13f_information_table_xml(call)).find("t:infoTable", NS)
    assert_shaped_like(row.getroottree().getroot(), reals, skip={"putCall"})
    tags = [etree.QName(c).localname for c in row]
    assert tags[tags.index("putCall") - 1 : tags.index("putCall") + 2] == [
        "shrsOrPrnAmt",
        "putCall",
        "investmentDiscretion",
    ]
    assert row.findtext("t:putCall", namespaces=NS) == "Call"


def test_13f_namespaces_and_declarations_are_the_real_ones() -> None:
    cover = form13f_primary_doc_xml(filing_13f(FIRST_DOLLARS_DAY))
    table = form13f_information_table_xml(filing_13f(FIRST_DOLLARS_DAY))
    real_cover = (THIRTEEN_F / "bard-financial-services_2021q3" / "primary_doc.xml").read_bytes()
    real_table = (THIRTEEN_F / "bard-financial-services_2021q3" / "infotable.xml").read_bytes()
    assert cover.splitlines()[0] == real_cover.splitlines()[0]
    assert table.splitlines()[:2] == real_table.splitlines()[:2]
    root = parse(cover)
    assert root.tag == f"{{{FILER_NS}}}edgarSubmission"
    assert root.nsmap == {None: FILER_NS, "com": COMMON_NS}
    street = root.find("f:formData/f:coverPage/f:filingManager/f:address/c:street1", NS)
    assert street.text == "222 BERKELEY STREET, 13TH FLOOR"
    assert parse(table).tag == f"{{{INFO_NS}}}informationTable"


def test_13f_cover_values() -> None:
    root = parse(form13f_primary_doc_xml(filing_13f(dt.date(2022, 11, 14))))
    assert root.findtext("f:schemaVersion", namespaces=NS) == "X0202"
    assert root.findtext("f:headerData/f:submissionType", namespaces=NS) == "13F-HR"
    assert root.findtext("f:headerData/f:filerInfo/f:filer/f:credentials/f:cik", namespaces=NS) == (
        "0001732811"
    )
    assert root.findtext("f:headerData/f:filerInfo/f:periodOfReport", namespaces=NS) == "09-30-2022"
    cover = root.find("f:formData/f:coverPage", NS)
    assert cover.findtext("f:reportCalendarOrQuarter", namespaces=NS) == "09-30-2022"
    assert cover.findtext("f:isAmendment", namespaces=NS) == "false"
    assert cover.find("f:amendmentNo", NS) is None
    assert cover.findtext("f:filingManager/f:name", namespaces=NS) == "MFN Partners Management, LP"
    assert cover.findtext("f:reportType", namespaces=NS) == "13F HOLDINGS REPORT"
    assert cover.findtext("f:form13FFileNumber", namespaces=NS) == "028-32811"
    signature = root.find("f:formData/f:signatureBlock", NS)
    assert signature.findtext("f:name", namespaces=NS) == "Jon Reisman"
    assert signature.findtext("f:signatureDate", namespaces=NS) == "11-14-2022"
    summary = root.find("f:formData/f:summaryPage", NS)
    assert summary.findtext("f:otherIncludedManagersCount", namespaces=NS) == "0"
    assert summary.findtext("f:tableEntryTotal", namespaces=NS) == "3"


def test_13f_dates_are_written_mm_dd_yyyy_as_in_real_covers() -> None:
    real = parse_file(THIRTEEN_F / "bard-financial-services_2021q3" / "primary_doc.xml")
    assert real.findtext("f:formData/f:coverPage/f:reportCalendarOrQuarter", namespaces=NS) == (
        "09-30-2021"
    )
    ours = parse(
        form13f_primary_doc_xml(filing_13f(dt.date(2021, 10, 15), period=dt.date(2021, 9, 30)))
    )
    for path in (
        "f:formData/f:coverPage/f:reportCalendarOrQuarter",
        "f:headerData/f:filerInfo/f:periodOfReport",
    ):
        assert ours.findtext(path, namespaces=NS) == real.findtext(path, namespaces=NS)
    assert ours.findtext("f:formData/f:signatureBlock/f:signatureDate", namespaces=NS) == (
        real.findtext("f:formData/f:signatureBlock/f:signatureDate", namespaces=NS)
    )


def _values_written(filing: Filing13F) -> tuple[list[int], int]:
    table = parse(form13f_information_table_xml(filing))
    rows = [int(v.text) for v in table.findall("t:infoTable/t:value", NS)]
    cover = parse(form13f_primary_doc_xml(filing))
    total = int(cover.findtext("f:formData/f:summaryPage/f:tableValueTotal", namespaces=NS))
    return rows, total


def test_13f_values_in_thousands_rounded_half_up_when_filed_before_2023_01_03() -> None:
    filing = filing_13f(BEFORE_DOLLARS)
    assert filing.values_in_thousands
    rows, total = _values_written(filing)
    # 24,600,500 -> 24,601 (half up), 583,499 -> 583, 1,500 -> 2
    assert rows == [24601, 583, 2]
    assert total == 24601 + 583 + 2  # ties out with the rows, as the real Bard table does
    assert [reported_value(filing, v) for v in (499, 500, 1499, 1500, 0)] == [0, 1, 1, 2, 0]
    assert table_value_total(filing) == total


def test_13f_values_in_dollars_from_2023_01_03() -> None:
    filing = filing_13f(FIRST_DOLLARS_DAY)
    assert not filing.values_in_thousands
    rows, total = _values_written(filing)
    assert rows == [24_600_500, 583_499, 1_500]
    assert total == 24_600_500 + 583_499 + 1_500


def test_real_bard_table_ties_out_in_thousands_like_ours() -> None:
    # The convention the cover total follows: sum of the row values as written.
    table = parse_file(THIRTEEN_F / "bard-financial-services_2021q3" / "infotable.xml")
    cover = parse_file(THIRTEEN_F / "bard-financial-services_2021q3" / "primary_doc.xml")
    rows = [int(v.text) for v in table.findall("t:infoTable/t:value", NS)]
    assert len(rows) == 278
    total = cover.findtext("f:formData/f:summaryPage/f:tableValueTotal", namespaces=NS)
    assert sum(rows) == int(total) == 1129298


def test_13f_information_table_rows() -> None:
    table = parse(form13f_information_table_xml(filing_13f(FIRST_DOLLARS_DAY)))
    first, second, third = table.findall("t:infoTable", NS)
    assert first.findtext("t:nameOfIssuer", namespaces=NS) == "RICE ACQUISITION CORP 3"
    assert first.findtext("t:titleOfClass", namespaces=NS) == "ORD SHS CL A"
    assert first.findtext("t:cusip", namespaces=NS) == "G7553X106"
    assert first.findtext("t:figi", namespaces=NS) == "BBG01X0FFN50"
    assert first.findtext("t:shrsOrPrnAmt/t:sshPrnamt", namespaces=NS) == "2400000"
    assert first.findtext("t:shrsOrPrnAmt/t:sshPrnamtType", namespaces=NS) == "SH"
    assert first.findtext("t:investmentDiscretion", namespaces=NS) == "SOLE"
    assert first.find("t:otherManager", NS) is None
    assert first.find("t:putCall", NS) is None
    assert [v.text for v in first.find("t:votingAuthority", NS)] == ["2400000", "0", "0"]
    assert second.find("t:figi", NS) is None
    assert second.findtext("t:investmentDiscretion", namespaces=NS) == "DFND"
    assert second.findtext("t:otherManager", namespaces=NS) == "1"
    assert [etree.QName(v).localname for v in second.find("t:votingAuthority", NS)] == [
        "Sole",
        "Shared",
        "None",
    ]
    assert [v.text for v in third.find("t:votingAuthority", NS)] == ["0", "12", "0"]


def test_13f_amendment_cover() -> None:
    amended = filing_13f(FIRST_DOLLARS_DAY, amendment_number=1, amendment_type="NEW HOLDINGS")
    real = parse_file(THIRTEEN_F / "mfn-partners_2025q4_13F-HR-A" / "primary_doc.xml")
    ours = parse(form13f_primary_doc_xml(amended))
    for path in (
        "f:headerData/f:submissionType",
        "f:formData/f:coverPage/f:isAmendment",
        "f:formData/f:coverPage/f:amendmentNo",
        "f:formData/f:coverPage/f:amendmentInfo/f:amendmentType",
        "f:formData/f:coverPage/f:amendmentInfo/f:confDeniedExpired",
    ):
        assert ours.findtext(path, namespaces=NS) == real.findtext(path, namespaces=NS), path
    assert ours.findtext("f:headerData/f:submissionType", namespaces=NS) == "13F-HR/A"


def test_13f_is_deterministic() -> None:
    for filed in (BEFORE_DOLLARS, FIRST_DOLLARS_DAY):
        assert form13f_primary_doc_xml(filing_13f(filed)) == form13f_primary_doc_xml(
            filing_13f(filed)
        )
        assert form13f_information_table_xml(filing_13f(filed)) == form13f_information_table_xml(
            filing_13f(filed)
        )


def test_13f_empty_table_is_still_a_document() -> None:
    filing = filing_13f(FIRST_DOLLARS_DAY, holdings=())
    assert parse(form13f_information_table_xml(filing)).tag == f"{{{INFO_NS}}}informationTable"
    assert _values_written(filing) == ([], 0)


# --------------------------------------------------------------------------------------------
# companyfacts JSON

MARVELL_FACTS = XBRL_JSON / "companyfacts" / "CIK0001835632.json"
# A slice of Marvell's real companyfacts: both dei tags, us-gaap tags whose real order is
# case-insensitive (StockholdersEquity before StockIssued…), a per-share float tag, and an srt
# tag SEC gives without label or description.
MARVELL_SLICE = {
    "dei": ["EntityCommonStockSharesOutstanding", "EntityPublicFloat"],
    "us-gaap": [
        "EarningsPerShareDiluted",
        "StockholdersEquity",
        "StockIssuedDuringPeriodValueAcquisitions",
    ],
    "srt": ["StockRepurchaseProgramAuthorizedAmount1"],
}


def _date(text: str | None) -> dt.date | None:
    return None if text is None else dt.date.fromisoformat(text)


def records_from_real_companyfacts(real: dict[str, Any]) -> CompanyFacts:
    facts: list[Fact] = []
    labels: dict[str, tuple[str, str]] = {}
    for taxonomy, tags in MARVELL_SLICE.items():
        for tag in tags:
            concept = real["facts"][taxonomy][tag]
            if concept["label"] is not None:
                labels[tag] = (concept["label"], concept["description"])
            for unit, entries in concept["units"].items():
                for e in entries:
                    facts.append(
                        Fact(
                            taxonomy=taxonomy,
                            tag=tag,
                            unit=unit,
                            end=dt.date.fromisoformat(e["end"]),
                            value=e["val"],
                            accession=e["accn"],
                            fy=e["fy"],
                            fp=e["fp"],
                            form=e["form"],
                            filed=dt.date.fromisoformat(e["filed"]),
                            start=_date(e.get("start")),
                            frame=e.get("frame"),
                        )
                    )
    # Input order must not matter: shuffle with a fixed seed.
    random.Random(7).shuffle(facts)
    return CompanyFacts(
        cik=str(real["cik"]), entity_name=real["entityName"], facts=tuple(facts), labels=labels
    )


def test_companyfacts_reproduces_a_real_slice_byte_for_byte() -> None:
    raw = MARVELL_FACTS.read_bytes()
    real = json.loads(raw)
    # SEC's bytes are exactly a compact dump: what we compare with is SEC's own format.
    assert json.dumps(real, separators=(",", ":")).encode() == raw
    expected = {
        "cik": real["cik"],
        "entityName": real["entityName"],
        "facts": {
            taxonomy: {tag: real["facts"][taxonomy][tag] for tag in tags}
            for taxonomy, tags in MARVELL_SLICE.items()
        },
    }
    ours = companyfacts_json(records_from_real_companyfacts(real))
    assert ours == json.dumps(expected, separators=(",", ":")).encode()
    assert ours.startswith(b'{"cik":1835632,"entityName":"MARVELL TECHNOLOGY, INC","facts":{"dei"')
    assert b'"label":null,"description":null' in ours  # the srt tag, as SEC serves it


def _fact(**changes: Any) -> Fact:
    fact = Fact(
        taxonomy="us-gaap",
        tag="Revenues",
        unit="USD",
        end=dt.date(2023, 3, 31),
        value=1_500_000_000.0,
        accession="0000000001-23-000010",
        fy=2023,
        fp="Q1",
        form="10-Q",
        filed=dt.date(2023, 5, 5),
        start=dt.date(2023, 1, 1),
        frame="CY2023Q1",
    )
    return dataclasses.replace(fact, **changes)


def test_companyfacts_shape_and_numbers() -> None:
    cf = CompanyFacts(
        cik="0000000001",
        entity_name="ACME ROBOTICS INC",
        facts=(
            _fact(),
            _fact(tag="EarningsPerShareBasic", unit="USD/shares", value=0.24, frame=None),
            _fact(
                taxonomy="dei",
                tag="EntityCommonStockSharesOutstanding",
                unit="shares",
                value=819500000,
                start=None,
                end=dt.date(2023, 4, 28),
                frame="CY2023Q2I",
            ),
        ),
        labels={"Revenues": ("Revenues", "Amount of revenue.")},
    )
    data = companyfacts_json(cf)
    assert b" " not in data.replace(b"ACME ROBOTICS INC", b"").replace(b"Amount of revenue", b"")
    parsed = json.loads(data)
    assert list(parsed) == ["cik", "entityName", "facts"]
    assert parsed["cik"] == 1 and isinstance(parsed["cik"], int)
    assert list(parsed["facts"]) == ["dei", "us-gaap"]
    revenue = parsed["facts"]["us-gaap"]["Revenues"]
    assert revenue["label"] == "Revenues"
    assert revenue["units"]["USD"] == [
        {
            "start": "2023-01-01",
            "end": "2023-03-31",
            "val": 1500000000,
            "accn": "0000000001-23-000010",
            "fy": 2023,
            "fp": "Q1",
            "form": "10-Q",
            "filed": "2023-05-05",
            "frame": "CY2023Q1",
        }
    ]
    assert b'"val":1500000000,' in data  # never 1500000000.0
    eps = parsed["facts"]["us-gaap"]["EarningsPerShareBasic"]
    assert eps["label"] is None and "frame" not in eps["units"]["USD/shares"][0]
    assert b'"val":0.24,' in data
    shares = parsed["facts"]["dei"]["EntityCommonStockSharesOutstanding"]["units"]["shares"][0]
    assert list(shares) == ["end", "val", "accn", "fy", "fp", "form", "filed", "frame"]


def test_companyfacts_orders_facts_by_end_then_filing() -> None:
    early = _fact(end=dt.date(2022, 3, 31), start=dt.date(2022, 1, 1), frame="CY2022Q1")
    restated = _fact(accession="0000000001-24-000010", filed=dt.date(2024, 5, 3), fy=2024)
    facts = (restated, _fact(), early)
    data = companyfacts_json(CompanyFacts("1", "ACME", facts))
    entries = json.loads(data)["facts"]["us-gaap"]["Revenues"]["units"]["USD"]
    assert [(e["end"], e["filed"]) for e in entries] == [
        ("2022-03-31", "2023-05-05"),
        ("2023-03-31", "2023-05-05"),
        ("2023-03-31", "2024-05-03"),
    ]
    assert data == companyfacts_json(CompanyFacts("1", "ACME", tuple(reversed(facts))))


def test_companyfacts_rejects_non_finite_values() -> None:
    with pytest.raises(ValueError):
        companyfacts_json(CompanyFacts("1", "ACME", (_fact(value=math.inf),)))


# --------------------------------------------------------------------------------------------
# submissions JSON

MARVELL_SUBMISSIONS = XBRL_JSON / "submissions" / "CIK0001835632.json"
ROWS = 12


def submissions_from_real(real: dict[str, Any], rows: int) -> Submissions:
    mailing = real["addresses"]["mailing"]
    recent = real["filings"]["recent"]
    entries = []
    for i in range(rows):
        accepted = dt.datetime.strptime(recent["acceptanceDateTime"][i], "%Y-%m-%dT%H:%M:%S.%fZ")
        entries.append(
            FilingIndexEntry(
                accession=recent["accessionNumber"][i],
                filing_date=dt.date.fromisoformat(recent["filingDate"][i]),
                report_date=_date(recent["reportDate"][i] or None),
                form=recent["form"][i],
                primary_document=recent["primaryDocument"][i],
                primary_doc_description=recent["primaryDocDescription"][i],
                size=recent["size"][i],
                is_xbrl=bool(recent["isXBRL"][i]),
                acceptance_datetime=accepted.replace(tzinfo=dt.UTC),
                act=recent["act"][i],
                file_number=recent["fileNumber"][i],
                film_number=recent["filmNumber"][i],
                items=recent["items"][i],
            )
        )
    return Submissions(
        cik=real["cik"],
        name=real["name"],
        entity_type=real["entityType"],
        sic=real["sic"],
        sic_description=real["sicDescription"],
        tickers=tuple(real["tickers"]),
        exchanges=tuple(real["exchanges"]),
        fiscal_year_end=real["fiscalYearEnd"],
        state_of_incorporation=real["stateOfIncorporation"],
        address=Address(
            mailing["street1"],
            mailing["city"],
            mailing["stateOrCountry"],
            mailing["zipCode"],
            street2=mailing["street2"],
        ),
        filings=tuple(entries),
        ein=real["ein"],
        category=real["category"],
        phone=real["phone"],
        owner_org=real["ownerOrg"],
    )


def test_submissions_reproduce_a_real_file_byte_for_byte() -> None:
    raw = MARVELL_SUBMISSIONS.read_bytes()
    real = json.loads(raw)
    assert json.dumps(real, separators=(",", ":")).encode() == raw
    expected = dict(real)
    expected["filings"] = {
        "recent": {name: values[:ROWS] for name, values in real["filings"]["recent"].items()},
        "files": [],
    }
    ours = submissions_json(submissions_from_real(real, ROWS))
    assert ours == json.dumps(expected, separators=(",", ":")).encode()


def test_submissions_keys_and_derived_columns() -> None:
    real = json.loads(MARVELL_SUBMISSIONS.read_bytes())
    sub = Submissions(
        cik="1835632",
        name="Acme Robotics, Inc.",
        entity_type="operating",
        sic=None,
        sic_description=None,
        tickers=("ACME",),
        exchanges=("Nasdaq",),
        fiscal_year_end="1231",
        state_of_incorporation="DE",
        address=Address("1 MAIN ST", "AUSTIN", "TX", "78701"),
        former_names=(FormerName("ACME MOTORS INC", dt.date(2005, 2, 17), dt.date(2017, 1, 27)),),
        filings=(
            FilingIndexEntry(
                "0001835632-24-000009",
                dt.date(2024, 3, 13),
                dt.date(2024, 2, 3),
                "10-K",
                "acme-20240203.htm",
                "FORM 10-K",
                15526955,
                True,
            ),
            FilingIndexEntry(
                "0001628280-24-000001",
                dt.date(2024, 3, 1),
                dt.date(2024, 2, 28),
                "4",
                "xslF345X05/form4.xml",
                "FORM 4",
                5675,
                False,
            ),
        ),
    )
    data = submissions_json(sub)
    parsed = json.loads(data)
    assert list(parsed) == list(real)
    assert list(parsed["filings"]) == ["recent", "files"]
    assert list(parsed["filings"]["recent"]) == list(real["filings"]["recent"])
    assert parsed["cik"] == "0001835632"
    assert parsed["sic"] == "" and parsed["sicDescription"] == ""
    assert parsed["filings"]["files"] == []
    assert parsed["insiderTransactionForIssuerExists"] == 1
    assert parsed["insiderTransactionForOwnerExists"] == 0
    recent = parsed["filings"]["recent"]
    assert recent["act"] == ["34", ""]
    assert recent["core_type"] == ["XBRL", "4"]
    assert recent["isXBRL"] == [1, 0] and recent["isXBRLNumeric"] == [1, 0]
    assert recent["reportDate"] == ["2024-02-03", "2024-02-28"]
    for accepted, filed in zip(recent["acceptanceDateTime"], recent["filingDate"], strict=True):
        moment = dt.datetime.strptime(accepted, "%Y-%m-%dT%H:%M:%S.000Z")
        assert moment.date().isoformat() == filed
        assert 13 <= moment.hour <= 21
    # formerNames timestamps as in Tesla's real file (same dates, same text).
    tesla = json.loads((XBRL_JSON / "submissions" / "CIK0001318605.json").read_bytes())
    assert parsed["formerNames"] == [dict(tesla["formerNames"][0], name="ACME MOTORS INC")]
    assert data == submissions_json(sub)


def test_individuals_are_owners_not_issuers() -> None:
    person = Submissions(
        cik="315090",
        name="BUFFETT WARREN E",
        entity_type="other",
        sic=None,
        sic_description=None,
        tickers=(),
        exchanges=(),
        fiscal_year_end="1231",
        state_of_incorporation="",
        address=Address("3555 FARNAM ST", "OMAHA", "NE", "68131"),
        filings=(
            FilingIndexEntry(
                "0000315090-24-000001",
                dt.date(2024, 3, 1),
                dt.date(2024, 2, 28),
                "4",
                "xslF345X05/form4.xml",
                "FORM 4",
                5675,
                False,
            ),
        ),
    )
    parsed = json.loads(submissions_json(person))
    assert parsed["insiderTransactionForOwnerExists"] == 1
    assert parsed["insiderTransactionForIssuerExists"] == 0
    assert parsed["tickers"] == [] and parsed["exchanges"] == []


# --------------------------------------------------------------------------------------------
# file names


def test_landing_file_names() -> None:
    assert form4_file_name(form4_record()) == "form4/0001234567-24-000123.xml"
    assert form13f_file_names(filing_13f(FIRST_DOLLARS_DAY)) == (
        "13f/0000904454-23-000001/primary_doc.xml",
        "13f/0000904454-23-000001/infotable.xml",
    )
    assert companyfacts_file_name("1835632") == "companyfacts/CIK0001835632.json"
    assert submissions_file_name(1835632) == "submissions/CIK0001835632.json"


# --------------------------------------------------------------------------------------------
# round trips through the readers


def _write(tmp_path: Path, relative: str, data: bytes) -> Path:
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_form4_round_trip(tmp_path: Path) -> None:
    reader = pytest.importorskip("findata.sources.readers.form4")
    record = form4_record(amendment_of=dt.date(2024, 9, 25))
    path = _write(tmp_path, form4_file_name(record), form4_xml(record))
    document = reader.read_form4(path)
    header = document.header
    assert header.accession == record.accession
    assert header.document_type == "4/A"
    assert header.period_of_report == record.period_of_report
    assert header.date_of_original_submission == dt.date(2024, 9, 25)
    assert (header.issuer_cik, header.issuer_name, header.issuer_ticker) == (
        record.issuer_cik,
        record.issuer_name,
        record.issuer_ticker,
    )
    assert header.aff10b5_one is True
    assert header.remarks == record.remarks
    assert header.signature_date == record.filed
    owner = document.owners.iloc[0]
    assert owner["owner_cik"] == "0001211060" and owner["owner_name"] == "DOE JANE"
    assert bool(owner["is_director"]) and bool(owner["is_officer"])
    assert not bool(owner["is_ten_percent_owner"]) and not bool(owner["is_other"])
    assert owner["officer_title"] == "Chief Financial Officer"

    lines = document.lines
    assert list(lines["kind"]) == ["transaction", "transaction", "holding", "transaction"]
    assert list(lines["table"]) == ["non_derivative"] * 3 + ["derivative"]
    sale, gift, holding, option = (lines.iloc[i] for i in range(4))
    assert sale["transaction_code"] == "S"
    assert sale["shares"] == 7214637.0
    assert sale["price_per_share"] == pytest.approx(36.8567)
    assert sale["shares_owned_following"] == 55636551.0
    assert sale["footnote_ids"] == "F1"
    assert sale["transaction_date"] == dt.datetime(2024, 9, 24)
    assert math.isnan(gift["price_per_share"]) and gift["footnote_ids"] == "F2"
    assert holding["shares_owned_following"] == 15733625.0
    assert holding["nature_of_ownership"] == "See Footnote"
    assert option["conversion_or_exercise_price"] == pytest.approx(0.33)
    assert option["shares"] == pytest.approx(196.356)
    assert option["underlying_shares"] == pytest.approx(196.356)
    assert option["shares_owned_following"] == pytest.approx(12629.042)
    assert option["expiration_date"] == dt.datetime(2035, 4, 29)
    assert option.isna()["exercise_date"]
    assert option["footnote_ids"] == "F4"
    assert list(document.footnotes["footnote_id"]) == ["F1", "F2", "F3", "F4"]


@pytest.mark.parametrize("filed", [BEFORE_DOLLARS, FIRST_DOLLARS_DAY])
def test_13f_round_trip(tmp_path: Path, filed: dt.date) -> None:
    reader = pytest.importorskip("findata.sources.readers.form13f")
    record = filing_13f(filed, amendment_number=2, amendment_type="RESTATEMENT")
    primary_name, table_name = form13f_file_names(record)
    primary = _write(tmp_path, primary_name, form13f_primary_doc_xml(record))
    table = _write(tmp_path, table_name, form13f_information_table_xml(record))
    document = reader.read_13f_filing(primary, table)
    assert document.accession == record.accession
    assert document.value_unit == ("thousands" if record.values_in_thousands else "dollars")
    assert document.cover_total is not None and document.cover_total.status == "equal"
    assert document.entries_match_cover is True
    cover = document.cover
    assert cover.form_type == "13F-HR/A"
    assert cover.period == record.period
    assert cover.manager_cik == record.manager_cik
    assert cover.manager_name == record.manager_name
    assert (cover.amendment_number, cover.amendment_type) == (2, "RESTATEMENT")
    assert cover.signature_date == filed
    holdings = document.holdings
    expected_usd = (
        [24_601_000, 583_000, 2_000] if record.values_in_thousands else [24_600_500, 583_499, 1_500]
    )
    assert list(holdings["value_usd"]) == expected_usd
    assert list(holdings["cusip"]) == [h.cusip for h in record.holdings]
    assert list(holdings["shares"]) == [h.shares for h in record.holdings]
    assert list(holdings["voting_shared"]) == [0, 0, 12]
    assert holdings["figi"].iloc[0] == "BBG01X0FFN50" and holdings.isna()["figi"].iloc[1]
    assert holdings["other_manager"].iloc[1] == "1"


def test_companyfacts_round_trip(tmp_path: Path) -> None:
    reader = pytest.importorskip("findata.sources.readers.sec_companyfacts")
    real = json.loads(MARVELL_FACTS.read_bytes())
    record = records_from_real_companyfacts(real)
    path = _write(tmp_path, companyfacts_file_name(record.cik), companyfacts_json(record))
    frame = reader.read_companyfacts(path)
    assert len(frame) == len(record.facts)
    assert set(frame["cik"]) == {"0001835632"}
    eps = frame[(frame["tag"] == "EarningsPerShareDiluted")]
    source = sorted(
        (f.end, f.filed, f.accession, f.value)
        for f in record.facts
        if f.tag == "EarningsPerShareDiluted"
    )
    assert len(eps) == len(source)
    first = eps.iloc[0]
    assert (first["end"].date(), first["filed"].date(), first["accession"]) == source[0][:3]
    assert first["value"] == pytest.approx(source[0][3])
    srt = frame[frame["taxonomy"] == "srt"]
    assert srt["label"].isna().all()


def test_submissions_round_trip(tmp_path: Path) -> None:
    reader = pytest.importorskip("findata.sources.readers.sec_submissions")
    record = submissions_from_real(json.loads(MARVELL_SUBMISSIONS.read_bytes()), ROWS)
    path = _write(tmp_path, submissions_file_name(record.cik), submissions_json(record))
    document = reader.read_submissions(path)
    assert document.cik == "0001835632"
    assert document.company.name == record.name
    assert document.company.fiscal_year_end == "0130"
    assert list(document.tickers["ticker"]) == ["MRVL"]
    filings = document.filings
    assert list(filings["accession"]) == [e.accession for e in record.filings]
    assert list(filings["form"]) == [e.form for e in record.filings]
    assert [d.date() for d in filings["filing_date"]] == [e.filing_date for e in record.filings]
    assert list(filings["size"]) == [e.size for e in record.filings]
