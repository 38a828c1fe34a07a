"""Landing as typed tables: every file under ``$FINDATA_HOME/landing`` read by its reader.

Layout of landing (each folder holds files of one format):

- ``sec/submissions/CIK##########.json`` (and ``-submissions-NNN`` pages): SEC submissions JSON
- ``sec/companyfacts/CIK##########.json``: SEC companyfacts JSON (XBRL facts)
- ``sec/form4/*.xml``: Form 4 ``ownershipDocument``
- ``sec/13f/<accession>/primary_doc.xml`` + ``infotable.xml``, or ``sec/13f/*.txt`` (EDGAR's
  full-submission text file): 13F-HR
- ``prices/``, ``corporate_actions/``, ``security_master/``, ``index_membership/``: ``*.csv`` in
  the layouts of ``contracts/landing/<folder>.yaml``
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from orchestration.readers.coerce import typed_frame
from orchestration.readers.corporate_actions import read_corporate_actions
from orchestration.readers.form4 import Form4Header, read_form4
from orchestration.readers.form13f import (
    Cover13F,
    Filing13FDocument,
    read_13f_filing,
    read_13f_submission_text,
)
from orchestration.readers.index_membership import read_index_membership
from orchestration.readers.prices import read_prices
from orchestration.readers.sec_companyfacts import read_companyfacts
from orchestration.readers.sec_submissions import Company, read_submissions
from orchestration.readers.security_master import read_security_master


@dataclass
class LandingTables:
    """Landing read into one DataFrame per table, each row tagged with its source file."""

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    files: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict[str, dict[str, int]]:
        """Files read per source and rows per table."""
        return {
            "files": dict(self.files),
            "rows": {name: len(frame) for name, frame in self.tables.items()},
        }


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if not f.empty] or frames[:1]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


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


def _records_frame(records: list[dict[str, object]], dtypes: dict[str, str]) -> pd.DataFrame:
    """Records as a DataFrame typed by ``dtypes`` (the same columns when there are none)."""
    return typed_frame(records, dtypes)


def _tagged(frame: pd.DataFrame, **columns: object) -> pd.DataFrame:
    return frame.assign(**columns)


def _csv_tables(paths: Iterable[Path], reader: Callable[[Path], pd.DataFrame]) -> pd.DataFrame:
    return _concat([_tagged(reader(p), source_file=str(p)) for p in sorted(paths)])


def _thirteen_f_documents(folder: Path) -> list[Filing13FDocument]:
    documents = (
        [
            read_13f_filing(sub / "primary_doc.xml", sub / "infotable.xml", accession=sub.name)
            for sub in sorted(p for p in folder.iterdir() if p.is_dir())
        ]
        if folder.exists()
        else []
    )
    documents += [read_13f_submission_text(p) for p in sorted(folder.glob("*.txt"))]
    return documents


_COVER_DTYPES = _column_dtypes(
    Cover13F,
    {
        "accession": "string",
        "filed": "date",
        "value_unit": "string",
        "total_matches_cover": "boolean",
    },
)


def _cover_row(document: Filing13FDocument) -> dict[str, object]:
    cover = dataclasses.asdict(document.cover)
    cover.pop("other_managers", None)
    cover.pop("included_managers", None)
    # two loose XML documents carry no filing date; the cover's signature date stands in for it
    # (EDGAR's full-submission .txt has the real one, FILED AS OF DATE)
    filed = document.filed or document.cover.signature_date
    return {
        "accession": document.accession,
        "filed": filed,
        "value_unit": document.value_unit,
        "total_matches_cover": document.total_matches_cover,
        **cover,
    }


def read_sec_submissions(landing: Path) -> dict[str, pd.DataFrame]:
    """``sec/submissions``: companies, their filing index, tickers and former names."""
    submissions = [read_submissions(p) for p in _files(landing / "sec/submissions", "*.json")]
    companies = [s for s in submissions if s.company is not None]
    return {
        "sec_companies": _records_frame(
            [dataclasses.asdict(s.company) for s in companies], _column_dtypes(Company)
        ),
        "sec_filings": _concat([s.filings.assign(cik=s.cik) for s in submissions]),
        "sec_tickers": _concat([s.tickers.assign(cik=s.cik) for s in companies]),
        "sec_former_names": _concat([s.former_names.assign(cik=s.cik) for s in companies]),
    }


def read_sec_companyfacts(landing: Path) -> dict[str, pd.DataFrame]:
    """``sec/companyfacts``: every XBRL fact of every company."""
    paths = _files(landing / "sec/companyfacts", "*.json")
    return {"sec_facts": _concat([read_companyfacts(p) for p in paths])}


def read_sec_form4(landing: Path) -> dict[str, pd.DataFrame]:
    """``sec/form4``: filings (header), reporting owners and table lines, by accession."""
    form4s = [read_form4(p) for p in _files(landing / "sec/form4", "*.xml")]
    return {
        "form4_filings": _records_frame(
            [dataclasses.asdict(f.header) for f in form4s], _column_dtypes(Form4Header)
        ),
        "form4_owners": _concat([f.owners.assign(accession=f.header.accession) for f in form4s]),
        "form4_lines": _concat([f.lines.assign(accession=f.header.accession) for f in form4s]),
    }


def read_sec_13f(landing: Path) -> dict[str, pd.DataFrame]:
    """``sec/13f``: cover pages and information-table rows (value in USD), by accession."""
    documents = _thirteen_f_documents(landing / "sec/13f")
    return {
        "form13f_filings": _records_frame([_cover_row(d) for d in documents], _COVER_DTYPES),
        "form13f_holdings": _concat([d.holdings.assign(accession=d.accession) for d in documents]),
    }


def _csv_source(folder: str, reader: Callable[[Path], pd.DataFrame]) -> LandingReader:
    def read(landing: Path) -> dict[str, pd.DataFrame]:
        return {folder: _csv_tables(_files(landing / folder, "*.csv"), reader)}

    read.__doc__ = f"``{folder}/*.csv``, in the layouts of contracts/landing/{folder}.yaml."
    return read


LandingReader = Callable[[Path], dict[str, pd.DataFrame]]


@dataclass(frozen=True)
class LandingSource:
    """A landing folder, the raw tables it gives, and the function that reads them."""

    folder: str
    tables: tuple[str, ...]
    read: LandingReader


#: every landing source by name
LANDING_SOURCES: dict[str, LandingSource] = {
    "sec_submissions": LandingSource(
        "sec/submissions",
        ("sec_companies", "sec_filings", "sec_tickers", "sec_former_names"),
        read_sec_submissions,
    ),
    "sec_companyfacts": LandingSource("sec/companyfacts", ("sec_facts",), read_sec_companyfacts),
    "sec_form4": LandingSource(
        "sec/form4", ("form4_filings", "form4_owners", "form4_lines"), read_sec_form4
    ),
    "sec_13f": LandingSource("sec/13f", ("form13f_filings", "form13f_holdings"), read_sec_13f),
    **{
        folder: LandingSource(folder, (folder,), _csv_source(folder, reader))
        for folder, reader in (
            ("prices", read_prices),
            ("corporate_actions", read_corporate_actions),
            ("security_master", read_security_master),
            ("index_membership", read_index_membership),
        )
    },
}


def _files(folder: Path, pattern: str) -> list[Path]:
    return sorted(folder.glob(pattern))


def source_files(landing: Path, source: str) -> list[Path]:
    """Every landing file of ``source``, sorted."""
    folder = landing / LANDING_SOURCES[source].folder
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def read_all_landing(landing: Path) -> LandingTables:
    """Read every landing file; a malformed file raises ``MalformedFileError`` naming it."""
    result = LandingTables()
    for name, source in LANDING_SOURCES.items():
        result.files[source.folder] = len(source_files(landing, name))
        tables = source.read(landing)
        if tuple(tables) != source.tables:
            raise RuntimeError(f"landing source {name} gave {tuple(tables)}, not {source.tables}")
        result.tables.update(tables)
    return result
