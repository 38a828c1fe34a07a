"""EDGAR's daily form index (``daily-index/YYYY/QTRn/form.YYYYMMDD.idx``): which filings were
disseminated on a day, by form type.

A text file: a few header lines, a column header (``Form Type  Company Name  CIK  Date Filed
File Name``), a rule of dashes, then one fixed-width line per (filing, filer) — a Form 4 appears
once under its issuer and once under each reporting owner. Form types hold spaces (``SC 13G/A``)
and so do names, so a line is read from the right (file name, date, CIK) and split at the column
where the header puts ``Company Name``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class IndexEntry:
    """One line of a form index."""

    form: str
    company: str
    cik: int
    filed: dt.date
    #: ``edgar/data/<cik>/<accession>.txt``
    path: str

    @property
    def accession(self) -> str:
        """The filing's dashed accession number."""
        return Path(self.path).stem

    @property
    def folder_url_path(self) -> str:
        """The filing's folder under ``/Archives/``: ``edgar/data/<cik>/<accession, no dashes>``."""
        return f"edgar/data/{self.cik}/{self.accession.replace('-', '')}"


def daily_form_index_path(day: dt.date) -> str:
    """The URL path of ``day``'s form index under the EDGAR host."""
    quarter = (day.month - 1) // 3 + 1
    return f"/Archives/edgar/daily-index/{day.year}/QTR{quarter}/form.{day:%Y%m%d}.idx"


def _date(text: str) -> dt.date:
    """``20240208`` (daily indexes) or ``2024-02-08`` (quarterly ones)."""
    return dt.date.fromisoformat(text if "-" in text else f"{text[:4]}-{text[4:6]}-{text[6:]}")


def read_form_index(path: Path) -> list[IndexEntry]:
    """Every entry of the form index at ``path``."""
    lines = path.read_text(encoding="latin-1").splitlines()
    header = next((i for i, line in enumerate(lines) if line.startswith("Form Type")), None)
    if header is None:
        raise ValueError(f"{path.name}: no 'Form Type' column header")
    name_column = lines[header].index("Company Name")
    # newer indexes wrap the column titles after "CIK": the entries start after the rule
    rule = next(i for i in range(header + 1, len(lines)) if lines[i].startswith("---"))
    entries = []
    for line in lines[rule + 1 :]:
        if not line.strip():
            continue
        left, cik, filed, file_name = line.rsplit(None, 3)
        entries.append(
            IndexEntry(
                form=left[:name_column].strip(),
                company=left[name_column:].strip(),
                cik=int(cik),
                filed=_date(filed),
                path=file_name,
            )
        )
    return entries
