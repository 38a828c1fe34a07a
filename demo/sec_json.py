"""data.sec.gov JSON: ``companyfacts`` (XBRL facts) and ``submissions`` (company and filings).

SEC serves both as compact JSON (``","`` and ``":"`` separators, no whitespace); dumping the
real files again with those separators gives their exact bytes, so that is how these are
written. Key order is SEC's; integers never carry ``.0``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from collections import defaultdict
from typing import Any

import orjson

from findata.demo.documents import (
    Address,
    CompanyFacts,
    Fact,
    FilingIndexEntry,
    Submissions,
)
from findata.sources.readers.coerce import pad_cik

#: taxonomies in the order SEC lists them; any other follows, alphabetically
TAXONOMY_ORDER = ("dei", "us-gaap", "ifrs-full", "srt", "invest", "ffd", "ecd")
#: forms filed under the reporting owner's name with no Exchange Act file number
_OWNERSHIP_FORMS = frozenset({"3", "3/A", "4", "4/A", "5", "5/A"})
#: forms whose XBRL carries financial statements (SEC's ``isXBRLNumeric``)
_NUMERIC_XBRL_FORMS = frozenset({"10-K", "10-K/A", "10-Q", "10-Q/A", "20-F", "20-F/A", "40-F"})


def _dumps(document: dict[str, Any]) -> bytes:
    # orjson writes SEC's compact form (no whitespace, UTF-8) many times faster than json on the
    # large demo's millions of facts. It would write NaN as null: fact values pass json_number,
    # which refuses non-finite numbers, and no other field is a float.
    return orjson.dumps(document)


def json_number(value: float | int) -> float | int:
    """A fact value for JSON: whole numbers as ``int`` (SEC writes ``181000000``, never ``.0``)."""
    if isinstance(value, bool):
        raise TypeError(f"not a number: {value!r}")
    if isinstance(value, int):
        return value
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {value!r}")
    return int(value) if value.is_integer() else float(value)


def taxonomy_sort_key(taxonomy: str) -> tuple[int, str]:
    """Where SEC lists a taxonomy: ``TAXONOMY_ORDER``'s first, any other after, by name."""
    if taxonomy in TAXONOMY_ORDER:
        return (TAXONOMY_ORDER.index(taxonomy), "")
    return (len(TAXONOMY_ORDER), taxonomy)


def tag_sort_key(tag: str) -> tuple[str, str]:
    """Where SEC lists a tag within its taxonomy."""
    # SEC lists tags alphabetically ignoring case ("StockholdersEquity" before "StockIssued…").
    return (tag.lower(), tag)


def _fact_key(fact: Fact) -> tuple[str, str, str, str]:
    # Within a unit SEC orders by period end, then start (instants first), then filing.
    start = fact.start.isoformat() if fact.start else ""
    return (fact.end.isoformat(), start, fact.filed.isoformat(), fact.accession)


def _fact_json(fact: Fact) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    if fact.start is not None:
        entry["start"] = fact.start.isoformat()
    entry["end"] = fact.end.isoformat()
    entry["val"] = json_number(fact.value)
    entry["accn"] = fact.accession
    entry["fy"] = fact.fy
    entry["fp"] = fact.fp
    entry["form"] = fact.form
    entry["filed"] = fact.filed.isoformat()
    if fact.frame is not None:
        entry["frame"] = fact.frame
    return entry


def companyfacts_json(cf: CompanyFacts) -> bytes:
    """``companyfacts/CIK##########.json`` for ``cf``: compact JSON bytes, ``cik`` an int.

    ``{"cik", "entityName", "facts": {taxonomy: {tag: {"label", "description", "units":
    {unit: [fact, …]}}}}}``; a tag without a label in ``cf.labels`` gets ``null`` label and
    description, as SEC gives for some tags.
    """
    grouped: dict[str, dict[str, dict[str, list[Fact]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for fact in cf.facts:
        grouped[fact.taxonomy][fact.tag][fact.unit].append(fact)
    facts: dict[str, Any] = {}
    for taxonomy in sorted(grouped, key=taxonomy_sort_key):
        tags: dict[str, Any] = {}
        for tag in sorted(grouped[taxonomy], key=tag_sort_key):
            label, description = cf.labels.get(tag, (None, None))
            units = grouped[taxonomy][tag]
            tags[tag] = {
                "label": label,
                "description": description,
                "units": {
                    unit: [_fact_json(f) for f in sorted(units[unit], key=_fact_key)]
                    for unit in sorted(units)
                },
            }
        facts[taxonomy] = tags
    return _dumps({"cik": int(cf.cik), "entityName": cf.entity_name, "facts": facts})


def sec_timestamp(value: dt.datetime) -> str:
    """A UTC timestamp as SEC's JSON writes it: ``2026-06-05T14:13:06.000Z``."""
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def acceptance_datetime(entry: FilingIndexEntry) -> dt.datetime:
    """When EDGAR accepted the filing: the record's own, else a fixed time derived from it.

    The derived time lies between 13:00 and 21:59:59 UTC on the filing date (business hours
    in New York) and depends only on the accession, so it never changes between runs.
    """
    if entry.acceptance_datetime is not None:
        return entry.acceptance_datetime
    digest = hashlib.sha256(entry.accession.encode("ascii")).digest()
    seconds = 13 * 3600 + int.from_bytes(digest[:4], "big") % (9 * 3600)
    midnight = dt.datetime.combine(entry.filing_date, dt.time(), tzinfo=dt.UTC)
    return midnight + dt.timedelta(seconds=seconds)


def _act(entry: FilingIndexEntry) -> str:
    if entry.act is not None:
        return entry.act
    return "" if entry.form in _OWNERSHIP_FORMS else "34"


def _recent_columns(entries: tuple[FilingIndexEntry, ...]) -> dict[str, list[Any]]:
    """``filings.recent``: one array per column, rows in the record's order (newest first);
    built column by column (a dict per row cost more than the rest on the large demo)."""
    return {
        "accessionNumber": [e.accession for e in entries],
        "filingDate": [e.filing_date.isoformat() for e in entries],
        "reportDate": [e.report_date.isoformat() if e.report_date else "" for e in entries],
        "acceptanceDateTime": [sec_timestamp(acceptance_datetime(e)) for e in entries],
        "act": [_act(e) for e in entries],
        "form": [e.form for e in entries],
        "fileNumber": [e.file_number for e in entries],
        "filmNumber": [e.film_number for e in entries],
        "items": [e.items for e in entries],
        "core_type": ["XBRL" if e.is_xbrl else e.form for e in entries],
        "size": [e.size for e in entries],
        "isXBRL": [int(e.is_xbrl) for e in entries],
        "isInlineXBRL": [int(e.is_xbrl) for e in entries],
        "isXBRLNumeric": [int(e.is_xbrl and e.form in _NUMERIC_XBRL_FORMS) for e in entries],
        "primaryDocument": [e.primary_document for e in entries],
        "primaryDocDescription": [e.primary_doc_description for e in entries],
    }


def _address_json(address: Address, is_mailing: bool) -> dict[str, Any]:
    return {
        "street1": address.street1,
        "street2": address.street2,
        "city": address.city,
        "stateOrCountry": address.state,
        "zipCode": address.zip_code,
        "stateOrCountryDescription": address.state,
        # SEC fills isForeignLocation on the mailing address only (null on business).
        "isForeignLocation": 0 if is_mailing else None,
        "foreignStateTerritory": None,
        "country": None,
        "countryCode": None,
    }


def submissions_json(sub: Submissions) -> bytes:
    """``submissions/CIK##########.json`` for ``sub``: compact JSON bytes.

    All top-level keys SEC writes, ``cik`` as a 10-digit string, ``formerNames`` with
    ``from``/``to`` timestamps, ``filings.recent`` column arrays and ``filings.files: []``
    (the demo never needs SEC's extra pages). One address serves as mailing and business.
    """
    is_individual = sub.entity_type == "other"
    files_ownership = any(e.form in _OWNERSHIP_FORMS for e in sub.filings)
    document: dict[str, Any] = {
        "cik": pad_cik(sub.cik),
        "entityType": sub.entity_type,
        "sic": sub.sic or "",
        "sicDescription": sub.sic_description or "",
        "ownerOrg": sub.owner_org,
        "insiderTransactionForOwnerExists": int(is_individual and files_ownership),
        "insiderTransactionForIssuerExists": int(not is_individual and files_ownership),
        "name": sub.name,
        "tickers": list(sub.tickers),
        "exchanges": list(sub.exchanges),
        "ein": sub.ein,
        "lei": None,
        "description": "",
        "website": "",
        "investorWebsite": "",
        "category": sub.category,
        "fiscalYearEnd": sub.fiscal_year_end,
        "stateOfIncorporation": sub.state_of_incorporation,
        "stateOfIncorporationDescription": sub.state_of_incorporation,
        "addresses": {
            "mailing": _address_json(sub.address, is_mailing=True),
            "business": _address_json(sub.address, is_mailing=False),
        },
        "phone": sub.phone,
        "flags": "",
        "formerNames": [
            {
                "name": former.name,
                "from": sec_timestamp(dt.datetime.combine(former.date_from, dt.time())),
                "to": sec_timestamp(dt.datetime.combine(former.date_to, dt.time())),
            }
            for former in sub.former_names
        ],
        "filings": {"recent": _recent_columns(sub.filings), "files": []},
    }
    return _dumps(document)


def company_list_json(rows: list[tuple[int, str, str, str | None]]) -> bytes:
    """The SEC's company list (``company_tickers_exchange.json``) of ``rows`` (cik, name,
    ticker, exchange name): ``{"fields": [...], "data": [[320193, "Apple Inc.", "AAPL",
    "Nasdaq"], ...]}``, the CIK a number as the SEC writes it."""
    return _dumps(
        {"fields": ["cik", "name", "ticker", "exchange"], "data": [list(r) for r in rows]}
    )
