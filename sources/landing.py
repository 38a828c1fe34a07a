"""Landing as typed tables: every file under ``$FINDATA_HOME/landing`` read by its reader.

Layout of landing (each folder holds files of one format):

- ``sec/submissions/CIK##########.json`` (and ``-submissions-NNN`` pages): SEC submissions JSON
- ``sec/companyfacts/CIK##########.json``: SEC companyfacts JSON (XBRL facts)
- ``sec/company_tickers/company_tickers_exchange.YYYYMMDD.json``: the SEC's company list as seen
  on that day (tickers and exchanges)
- ``sec/form4/*.xml``: Form 4 ``ownershipDocument``
- ``sec/13f/<accession>/primary_doc.xml`` + ``infotable.xml``, or ``sec/13f/*.txt`` (EDGAR's
  full-submission text file): 13F-HR
- ``prices/``, ``corporate_actions/``, ``security_master/``, ``index_membership/``: ``*.csv`` in
  the layouts of ``contracts/landing/<folder>.yaml``

A source is read unit by unit (a file, or a 13F folder); each unit has a key (its files' names,
sizes and modification times) by which ``landing_cache.py`` keeps its parsed rows, so a refresh
after one new file parses that file alone.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from findata.sources.readers.coerce import typed_frame
from findata.sources.readers.corporate_actions import read_corporate_actions
from findata.sources.readers.form4 import Form4Header, read_form4
from findata.sources.readers.form13f import (
    Cover13F,
    Filing13FDocument,
    read_13f_filing,
    read_13f_submission_text,
)
from findata.sources.readers.index_membership import read_index_membership
from findata.sources.readers.prices import read_prices
from findata.sources.readers.sec_company_tickers import read_company_tickers
from findata.sources.readers.sec_companyfacts import read_companyfacts
from findata.sources.readers.sec_submissions import Company, read_submissions
from findata.sources.readers.security_master import read_security_master

Tables = dict[str, pd.DataFrame]


@dataclass
class LandingTables:
    """Landing read into one DataFrame per table."""

    tables: Tables = field(default_factory=dict)
    files: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict[str, dict[str, int]]:
        """Files read per source and rows per table."""
        return {
            "files": dict(self.files),
            "rows": {name: len(frame) for name, frame in self.tables.items()},
        }


_SCALAR_DTYPES = {str: "string", int: "Int64", float: "float64", bool: "boolean", dt.date: "date"}


def _column_dtypes(record_type: type, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Column dtypes of a record dataclass, from its type hints (``X | None`` as ``X``);
    fields holding lists or nested records are left out."""
    dtypes = dict(extra or {})
    for name, hint in typing.get_type_hints(record_type).items():
        is_union = typing.get_origin(hint) in (typing.Union, types.UnionType)
        kinds = [k for k in typing.get_args(hint) if k is not type(None)] if is_union else [hint]
        if len(kinds) == 1 and kinds[0] in _SCALAR_DTYPES:
            dtypes[name] = _SCALAR_DTYPES[kinds[0]]
    return dtypes


_COMPANY_DTYPES = _column_dtypes(Company)
_FORM4_DTYPES = _column_dtypes(Form4Header)
_COVER_DTYPES = _column_dtypes(
    Cover13F,
    {
        "accession": "string",
        "filed": "date",
        "value_unit": "string",
        "cover_value_difference_usd": "Int64",
        "cover_value_difference_ratio": "Float64",
        "cover_total_status": "string",
    },
)


def _cover_row(document: Filing13FDocument) -> dict[str, object]:
    cover = dataclasses.asdict(document.cover)
    cover.pop("other_managers", None)
    cover.pop("included_managers", None)
    # two loose XML documents carry no filing date; the cover's signature date stands in for it
    # (EDGAR's full-submission .txt has the real one, FILED AS OF DATE)
    filed = document.filed or document.cover.signature_date
    total = document.cover_total
    return {
        "accession": document.accession,
        "filed": filed,
        "value_unit": document.value_unit,
        "cover_value_difference_usd": None if total is None else total.difference_usd,
        "cover_value_difference_ratio": None if total is None else total.ratio,
        "cover_total_status": None if total is None else total.status,
        **cover,
    }


def read_submissions_unit(path: Path) -> Tables:
    """One submissions file: its company (none on a pagination page), filings, tickers, names."""
    document = read_submissions(path)
    companies = [dataclasses.asdict(document.company)] if document.company is not None else []
    return {
        "sec_companies": typed_frame(companies, _COMPANY_DTYPES),
        "sec_filings": document.filings.assign(cik=document.cik),
        "sec_tickers": document.tickers.assign(cik=document.cik),
        "sec_former_names": document.former_names.assign(cik=document.cik),
    }


def read_company_tickers_unit(path: Path) -> Tables:
    """One snapshot of the SEC's company list: its tickers, as seen on the day it names."""
    return {"sec_company_tickers": read_company_tickers(path)}


def read_companyfacts_unit(path: Path) -> Tables:
    """One companyfacts file: every XBRL fact of one company."""
    return {"sec_facts": read_companyfacts(path)}


def read_form4_unit(path: Path) -> Tables:
    """One Form 4: header, reporting owners and table lines, keyed by accession."""
    document = read_form4(path)
    accession = document.header.accession
    return {
        "form4_filings": typed_frame([dataclasses.asdict(document.header)], _FORM4_DTYPES),
        "form4_owners": document.owners.assign(accession=accession),
        "form4_lines": document.lines.assign(accession=accession),
    }


def read_13f_unit(path: Path) -> Tables:
    """One 13F: a folder (primary_doc.xml + infotable.xml) or a full-submission .txt."""
    if path.is_dir():
        document = read_13f_filing(
            path / "primary_doc.xml", path / "infotable.xml", accession=path.name
        )
    else:
        document = read_13f_submission_text(path)
    return {
        "form13f_filings": typed_frame([_cover_row(document)], _COVER_DTYPES),
        "form13f_holdings": document.holdings.assign(accession=document.accession),
    }


def _csv_unit(folder: str, reader: Callable[[Path], pd.DataFrame]) -> Callable[[Path], Tables]:
    def read(path: Path) -> Tables:
        return {folder: reader(path).assign(source_file=path.name)}

    read.__doc__ = f"One ``{folder}/*.csv`` file, in a layout of contracts/landing/{folder}.yaml."
    return read


@dataclass(frozen=True)
class LandingSource:
    """A landing folder, the raw tables it gives, and how its units are found and read."""

    folder: str
    tables: tuple[str, ...]
    read_unit: Callable[[Path], Tables]
    patterns: tuple[str, ...]
    unit_is_folder: bool = False

    def units(self, landing: Path) -> list[Path]:
        """The units of this source in ``landing``: files (or 13F folders), sorted."""
        folder = landing / self.folder
        if not folder.exists():
            return []
        found = {p for pattern in self.patterns for p in folder.glob(pattern) if p.is_file()}
        if self.unit_is_folder:
            found |= {p for p in folder.iterdir() if p.is_dir()}
        return sorted(found)

    def files(self, landing: Path) -> list[Path]:
        """Every file under this source's folder."""
        folder = landing / self.folder
        return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


#: every landing source by name
LANDING_SOURCES: dict[str, LandingSource] = {
    "sec_submissions": LandingSource(
        "sec/submissions",
        ("sec_companies", "sec_filings", "sec_tickers", "sec_former_names"),
        read_submissions_unit,
        ("*.json",),
    ),
    "sec_company_tickers": LandingSource(
        "sec/company_tickers",
        ("sec_company_tickers",),
        read_company_tickers_unit,
        ("company_tickers_exchange.*.json",),
    ),
    "sec_companyfacts": LandingSource(
        "sec/companyfacts", ("sec_facts",), read_companyfacts_unit, ("*.json",)
    ),
    "sec_form4": LandingSource(
        "sec/form4", ("form4_filings", "form4_owners", "form4_lines"), read_form4_unit, ("*.xml",)
    ),
    "sec_13f": LandingSource(
        "sec/13f",
        ("form13f_filings", "form13f_holdings"),
        read_13f_unit,
        ("*.txt",),
        unit_is_folder=True,
    ),
    **{
        folder: LandingSource(folder, (folder,), _csv_unit(folder, reader), ("*.csv",))
        for folder, reader in (
            ("prices", read_prices),
            ("corporate_actions", read_corporate_actions),
            ("security_master", read_security_master),
            ("index_membership", read_index_membership),
        )
    },
}


def unit_key(unit: Path) -> str:
    """A cache key that changes whenever any file of the unit changes."""
    files = sorted(p for p in unit.rglob("*") if p.is_file()) if unit.is_dir() else [unit]
    digest = hashlib.sha256()
    for path in files:
        stat = path.stat()
        digest.update(f"{path.name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return f"{unit.name}:{digest.hexdigest()[:24]}"


def concat_frames(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The frames one after the other; an empty frame still carries the columns and dtypes, so
    one is kept when all are empty."""
    kept = [f for f in frames if not f.empty] or frames[:1]
    return pd.concat(kept, ignore_index=True) if kept else pd.DataFrame()


def read_source(landing: Path, name: str) -> Tables:
    """Every table of source ``name``; a malformed file raises ``MalformedFileError``. (The
    pipeline reads through ``landing_cache.load_source``, which parses only new units.)"""
    source = LANDING_SOURCES[name]
    parts = [source.read_unit(unit) for unit in source.units(landing)]
    return {table: concat_frames([part[table] for part in parts]) for table in source.tables}


def read_all_landing(landing: Path) -> LandingTables:
    """Read every landing source."""
    result = LandingTables()
    for name, source in LANDING_SOURCES.items():
        result.files[source.folder] = len(source.files(landing))
        result.tables.update(read_source(landing, name))
    return result
