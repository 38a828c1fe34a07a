"""The demo's SEC documents as the bytes SEC publishes, and where each lands.

One entry point for the generator: the serializers live in ``sec_form4``, ``sec_13f`` and
``sec_json`` (one format each; ``sec_json_columns`` writes companyfacts from fact columns); the
landing file names are here. Every function is pure: the same record gives the same bytes.
"""

from __future__ import annotations

import datetime as dt

from findata.demo.documents import Filing13F, Form4Filing
from findata.demo.sec_13f import (
    form13f_information_table_xml,
    form13f_primary_doc_xml,
    reported_value,
    table_value_total,
)
from findata.demo.sec_form4 import form4_xml
from findata.demo.sec_json import company_list_json, companyfacts_json, submissions_json
from findata.demo.sec_json_columns import companyfacts_json_from_columns
from findata.sources.readers.coerce import pad_cik
from findata.sources.readers.sec_company_tickers import snapshot_name

__all__ = [
    "company_list_file_name",
    "company_list_json",
    "companyfacts_file_name",
    "companyfacts_json",
    "companyfacts_json_from_columns",
    "form4_file_name",
    "form4_xml",
    "form13f_file_names",
    "form13f_information_table_xml",
    "form13f_primary_doc_xml",
    "reported_value",
    "submissions_file_name",
    "submissions_json",
    "table_value_total",
]


def form4_file_name(filing: Form4Filing) -> str:
    """Landing path of a Form 4, relative to the landing folder: ``form4/<accession>.xml``."""
    return f"form4/{filing.accession}.xml"


def form13f_file_names(filing: Filing13F) -> tuple[str, str]:
    """Landing paths of a 13F's two documents: ``(13f/<accession>/primary_doc.xml,
    13f/<accession>/infotable.xml)``."""
    folder = f"13f/{filing.accession}"
    return f"{folder}/primary_doc.xml", f"{folder}/infotable.xml"


def company_list_file_name(day: dt.date) -> str:
    """Landing path of the company list as seen on ``day``:
    ``company_tickers/company_tickers_exchange.YYYYMMDD.json``."""
    return f"company_tickers/{snapshot_name(day)}"


def companyfacts_file_name(cik: str | int) -> str:
    """Landing path of a companyfacts file: ``companyfacts/CIK##########.json``."""
    return f"companyfacts/CIK{pad_cik(cik)}.json"


def submissions_file_name(cik: str | int) -> str:
    """Landing path of a submissions file: ``submissions/CIK##########.json``."""
    return f"submissions/CIK{pad_cik(cik)}.json"
