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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from orchestration.readers.coerce import dates_column
from orchestration.readers.corporate_actions import read_corporate_actions
from orchestration.readers.form4 import read_form4
from orchestration.readers.form13f import (
    Filing13FDocument,
    read_13f_filing,
    read_13f_submission_text,
)
from orchestration.readers.index_membership import read_index_membership
from orchestration.readers.prices import read_prices
from orchestration.readers.sec_companyfacts import read_companyfacts
from orchestration.readers.sec_submissions import read_submissions
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


def _records_frame(records: list[dict[str, object]]) -> pd.DataFrame:
    """Records as a DataFrame whose date-valued columns have the readers' date dtype."""
    frame = pd.DataFrame(records)
    for column in frame.columns:
        values = frame[column].dropna()
        if len(values) and all(isinstance(v, dt.date) for v in values):
            frame[column] = dates_column(frame[column].tolist())
    return frame


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


def read_all_landing(landing: Path) -> LandingTables:
    """Read every landing file; a malformed file raises ``MalformedFileError`` naming it."""
    result = LandingTables()
    sec = landing / "sec"

    submissions = [read_submissions(p) for p in sorted((sec / "submissions").glob("*.json"))]
    result.files["sec/submissions"] = len(submissions)
    result.tables["sec_companies"] = _records_frame(
        [dataclasses.asdict(s.company) for s in submissions if s.company is not None]
    )
    result.tables["sec_filings"] = _concat([s.filings.assign(cik=s.cik) for s in submissions])
    result.tables["sec_tickers"] = _concat(
        [s.tickers.assign(cik=s.cik) for s in submissions if s.company is not None]
    )
    result.tables["sec_former_names"] = _concat(
        [s.former_names.assign(cik=s.cik) for s in submissions if s.company is not None]
    )

    facts = sorted((sec / "companyfacts").glob("*.json"))
    result.files["sec/companyfacts"] = len(facts)
    result.tables["sec_facts"] = _concat([read_companyfacts(p) for p in facts])

    form4s = [read_form4(p) for p in sorted((sec / "form4").glob("*.xml"))]
    result.files["sec/form4"] = len(form4s)
    result.tables["form4_filings"] = _records_frame([dataclasses.asdict(f.header) for f in form4s])
    result.tables["form4_owners"] = _concat(
        [f.owners.assign(accession=f.header.accession) for f in form4s]
    )
    result.tables["form4_lines"] = _concat(
        [f.lines.assign(accession=f.header.accession) for f in form4s]
    )

    thirteen_fs = _thirteen_f_documents(sec / "13f")
    result.files["sec/13f"] = len(thirteen_fs)
    result.tables["form13f_filings"] = _records_frame([_cover_row(d) for d in thirteen_fs])
    result.tables["form13f_holdings"] = _concat(
        [d.holdings.assign(accession=d.accession) for d in thirteen_fs]
    )

    for folder, reader in (
        ("prices", read_prices),
        ("corporate_actions", read_corporate_actions),
        ("security_master", read_security_master),
        ("index_membership", read_index_membership),
    ):
        paths = sorted((landing / folder).glob("*.csv"))
        result.files[folder] = len(paths)
        result.tables[folder] = _csv_tables(paths, reader)
    return result
