"""Reader for SEC submissions JSON (``data.sec.gov/submissions``): company facts and filing index.

Two shapes share one reader:

* the main file ``CIK##########.json``: company fields, ``formerNames`` and
  ``filings.recent`` (column arrays, newest first) plus ``filings.files`` (pagination pages);
* a pagination page ``CIK##########-submissions-001.json``: the same column arrays as a flat
  object, with no ``cik`` and no ``filings`` wrapper, so its CIK comes from the file name.

Quirks handled (see data/real/SOURCES.md):

* ``formerNames`` dates are timestamps such as ``1995-01-10T05:00:00.000Z`` (midnight US
  Eastern written in UTC) or ``2005-02-17T00:00:00.000Z``. Both mean a calendar date, so the
  date part is taken as written; converting the instant to a time zone would move the
  ``00:00Z`` ones to the previous day.
* ``acceptanceDateTime`` is a real UTC instant (a 10-K accepted at ``01:55:03Z`` was filed the
  previous evening US Eastern), so it is returned tz-aware in UTC.
* Empty strings mean "absent" (``reportDate``, ``act``, ``items`` ...) and become null.
* ``core_type`` and ``isXBRLNumeric`` (only in some files) are not part of the returned columns.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from findata.sources.readers.coerce import (
    DATE_DTYPE,
    dates_column,
    pad_cik,
    parse_iso_date,
    parse_sec_bool,
)
from findata.sources.readers.errors import MalformedFileError
from findata.sources.readers.json_file import load_json_object

#: dtype of ``acceptance_datetime`` (SEC writes milliseconds, always ``.000`` so far)
TIMESTAMP_DTYPE = "datetime64[ms, UTC]"

_MAIN_NAME = re.compile(r"^CIK(\d{10})\.json$", re.IGNORECASE)
_PAGE_NAME = re.compile(r"^CIK(\d{1,10})-submissions-\d+\.json$", re.IGNORECASE)
_ACCESSION = re.compile(r"^\d{10}-\d{2}-\d{6}$")
_DATE_PREFIX = re.compile(
    r"^(\d{4}-\d{2}-\d{2})(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$"
)

#: (JSON key in ``filings.recent``, returned column, kind); every key is required
_FILING_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("accessionNumber", "accession", "accession"),
    ("filingDate", "filing_date", "required_date"),
    ("reportDate", "report_date", "date"),
    ("acceptanceDateTime", "acceptance_datetime", "timestamp"),
    ("act", "act", "text"),
    ("form", "form", "required_text"),
    ("fileNumber", "file_number", "text"),
    ("filmNumber", "film_number", "text"),
    ("items", "items", "text"),
    ("size", "size", "int"),
    ("isXBRL", "is_xbrl", "bool"),
    ("isInlineXBRL", "is_inline_xbrl", "bool"),
    ("primaryDocument", "primary_document", "text"),
    ("primaryDocDescription", "primary_doc_description", "text"),
)

#: columns of the returned ``filings`` frame, in order
FILING_COLUMNS: tuple[str, ...] = ("cik", *(column for _, column, _ in _FILING_COLUMNS))


@dataclass(frozen=True)
class Company:
    """The company (or person) a main submissions file describes; blank SEC fields are None."""

    cik: str
    name: str
    entity_type: str | None
    sic: str | None
    sic_description: str | None
    category: str | None
    fiscal_year_end: str | None  # MMDD as SEC writes it, e.g. "1231"
    state_of_incorporation: str | None
    ein: str | None
    exchanges: list[str | None] = field(default_factory=list)
    tickers: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PaginationFile:
    """One entry of ``filings.files``: an older page of filings kept in a separate file."""

    name: str
    filing_from: dt.date
    filing_to: dt.date
    filing_count: int


@dataclass(frozen=True, eq=False)  # eq=False: DataFrames have no single truth value
class SubmissionsDocument:
    """A parsed submissions file: ``company`` is None for a pagination page."""

    cik: str
    company: Company | None
    tickers: pd.DataFrame
    former_names: pd.DataFrame
    filings: pd.DataFrame
    pagination_files: list[PaginationFile]

    @property
    def is_page(self) -> bool:
        """True for a pagination page (no company fields, filings only)."""
        return self.company is None


def read_submissions(path: str | Path) -> SubmissionsDocument:
    """Read a submissions main file or pagination page into a :class:`SubmissionsDocument`.

    ``filings`` has the columns of :data:`FILING_COLUMNS`: cik, accession, form, act,
    file_number, film_number, items, primary_document, primary_doc_description (string),
    filing_date, report_date (``DATE_DTYPE``), acceptance_datetime (``TIMESTAMP_DTYPE``),
    size (Int64), is_xbrl, is_inline_xbrl (boolean), in the file's order (newest first).
    ``tickers`` has ticker, exchange (string); ``former_names`` has name (string), date_from,
    date_to (``DATE_DTYPE``). Raises :class:`MalformedFileError` for anything it cannot accept.
    """
    path = Path(path)
    document = load_json_object(path)
    if "filings" in document or "cik" in document:
        return _read_main_file(path, document)
    if "accessionNumber" in document:
        return _read_page(path, document)
    raise MalformedFileError(
        path,
        "neither a submissions file (no 'cik'/'filings' keys) "
        "nor a pagination page (no 'accessionNumber' array)",
    )


def _read_main_file(path: Path, document: dict[str, Any]) -> SubmissionsDocument:
    cik = _cik_of(path, _required(path, document, "cik", ""), "cik")
    named = _MAIN_NAME.match(path.name)
    if named and named.group(1) != cik:
        raise MalformedFileError(path, f"file name says CIK {named.group(1)} but 'cik' is {cik}")
    filings = _required(path, document, "filings", "")
    if not isinstance(filings, dict):
        raise MalformedFileError(path, "'filings' is not an object")
    recent = _required(path, filings, "recent", "filings.")
    if not isinstance(recent, dict):
        raise MalformedFileError(path, "'filings.recent' is not an object")
    company = _company_of(path, document, cik)
    return SubmissionsDocument(
        cik=cik,
        company=company,
        tickers=_tickers_frame(company),
        former_names=_former_names_frame(path, document.get("formerNames") or []),
        filings=_filings_frame(path, recent, cik, "filings.recent."),
        pagination_files=_pagination_files(path, filings.get("files") or []),
    )


def _read_page(path: Path, document: dict[str, Any]) -> SubmissionsDocument:
    named = _PAGE_NAME.match(path.name)
    if not named:
        raise MalformedFileError(
            path,
            "a pagination page carries no 'cik'; its file name must be "
            "CIK##########-submissions-NNN.json",
        )
    cik = _cik_of(path, named.group(1), "file name CIK")
    return SubmissionsDocument(
        cik=cik,
        company=None,
        tickers=_empty_frame({"ticker": "string", "exchange": "string"}),
        former_names=_empty_frame(
            {"name": "string", "date_from": DATE_DTYPE, "date_to": DATE_DTYPE}
        ),
        filings=_filings_frame(path, document, cik, ""),
        pagination_files=[],
    )


def _required(path: Path, mapping: Mapping[str, Any], key: str, prefix: str) -> Any:
    if key not in mapping:
        raise MalformedFileError(path, f"missing required key '{prefix}{key}'")
    return mapping[key]


def _cik_of(path: Path, value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise MalformedFileError(path, f"{where} is not a CIK: {value!r}")
    try:
        return pad_cik(value)
    except ValueError as error:
        raise MalformedFileError(path, f"{where} is not a CIK: {value!r}") from error


def _optional_text(path: Path, mapping: Mapping[str, Any], key: str) -> str | None:
    value = mapping.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise MalformedFileError(path, f"'{key}' is not a string: {value!r}")
    value = value.strip()
    return value or None


def _company_of(path: Path, document: dict[str, Any], cik: str) -> Company:
    name = _optional_text(path, document, "name")
    if name is None:
        raise MalformedFileError(path, "missing required key 'name' (or it is blank)")
    tickers = document.get("tickers") or []
    exchanges = document.get("exchanges") or []
    if not isinstance(tickers, list) or not isinstance(exchanges, list):
        raise MalformedFileError(path, "'tickers' and 'exchanges' must be arrays")
    if len(tickers) != len(exchanges):
        raise MalformedFileError(
            path,
            f"'tickers' has {len(tickers)} entries but 'exchanges' has {len(exchanges)}; "
            "they are paired by position",
        )
    for index, ticker in enumerate(tickers):
        if not isinstance(ticker, str) or not ticker.strip():
            raise MalformedFileError(path, f"tickers[{index}] is not a ticker: {ticker!r}")
    for index, exchange in enumerate(exchanges):
        if exchange is not None and not isinstance(exchange, str):
            raise MalformedFileError(path, f"exchanges[{index}] is not a string: {exchange!r}")
    return Company(
        cik=cik,
        name=name,
        entity_type=_optional_text(path, document, "entityType"),
        sic=_optional_text(path, document, "sic"),
        sic_description=_optional_text(path, document, "sicDescription"),
        category=_optional_text(path, document, "category"),
        fiscal_year_end=_optional_text(path, document, "fiscalYearEnd"),
        state_of_incorporation=_optional_text(path, document, "stateOfIncorporation"),
        ein=_optional_text(path, document, "ein"),
        exchanges=[exchange or None for exchange in exchanges],
        tickers=[ticker.strip() for ticker in tickers],
    )


def _tickers_frame(company: Company) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "ticker": pd.Series(company.tickers, dtype="string"),
            "exchange": pd.Series(company.exchanges, dtype="string"),
        }
    )


def _date_part(path: Path, value: Any, where: str) -> dt.date | None:
    """A date, or the date written at the start of an SEC timestamp, taken as written."""
    if value is None or value == "":
        return None
    matched = _DATE_PREFIX.match(value) if isinstance(value, str) else None
    if not matched:
        raise MalformedFileError(path, f"{where} is not a date: {value!r}")
    try:
        return dt.date.fromisoformat(matched.group(1))
    except ValueError as error:
        raise MalformedFileError(path, f"{where} is not a date: {value!r}") from error


def _former_names_frame(path: Path, former_names: Any) -> pd.DataFrame:
    if not isinstance(former_names, list):
        raise MalformedFileError(path, "'formerNames' is not an array")
    names: list[str] = []
    starts: list[dt.date | None] = []
    ends: list[dt.date | None] = []
    for index, entry in enumerate(former_names):
        where = f"formerNames[{index}]"
        if not isinstance(entry, dict):
            raise MalformedFileError(path, f"{where} is not an object: {entry!r}")
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            raise MalformedFileError(path, f"{where}.name is missing or blank: {name!r}")
        names.append(name.strip())
        starts.append(_date_part(path, entry.get("from"), f"{where}.from"))
        ends.append(_date_part(path, entry.get("to"), f"{where}.to"))
    return pd.DataFrame(
        {
            "name": pd.Series(names, dtype="string"),
            "date_from": dates_column(starts),
            "date_to": dates_column(ends),
        }
    )


def _pagination_files(path: Path, files: Any) -> list[PaginationFile]:
    if not isinstance(files, list):
        raise MalformedFileError(path, "'filings.files' is not an array")
    pages: list[PaginationFile] = []
    for index, entry in enumerate(files):
        where = f"filings.files[{index}]"
        if not isinstance(entry, dict):
            raise MalformedFileError(path, f"{where} is not an object: {entry!r}")
        name = _required(path, entry, "name", f"{where}.")
        count = _required(path, entry, "filingCount", f"{where}.")
        if not isinstance(name, str) or not name:
            raise MalformedFileError(path, f"{where}.name is not a file name: {name!r}")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise MalformedFileError(path, f"{where}.filingCount is not a count: {count!r}")
        filing_from = _date_part(path, _required(path, entry, "filingFrom", f"{where}."), where)
        filing_to = _date_part(path, _required(path, entry, "filingTo", f"{where}."), where)
        if filing_from is None or filing_to is None:
            raise MalformedFileError(path, f"{where} has a blank filingFrom/filingTo")
        pages.append(PaginationFile(name, filing_from, filing_to, count))
    return pages


def _filings_frame(path: Path, columns: Mapping[str, Any], cik: str, prefix: str) -> pd.DataFrame:
    """The filing column arrays (``filings.recent`` or a page) as one typed frame."""
    for key, _, _ in _FILING_COLUMNS:
        if not isinstance(_required(path, columns, key, prefix), list):
            raise MalformedFileError(path, f"'{prefix}{key}' is not an array")
    lengths = {key: len(value) for key, value in columns.items() if isinstance(value, list)}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{key}={length}" for key, length in lengths.items())
        raise MalformedFileError(path, f"'{prefix}' column arrays differ in length: {shown}")
    rows = lengths[_FILING_COLUMNS[0][0]]
    frame: dict[str, pd.Series] = {"cik": pd.Series([cik] * rows, dtype="string")}
    for key, column, kind in _FILING_COLUMNS:
        frame[column] = _CONVERTERS[kind](path, columns[key], f"{prefix}{key}")
    return pd.DataFrame(frame)


def _text_column(path: Path, values: list[Any], where: str) -> pd.Series:
    cleaned: list[str | None] = []
    for index, value in enumerate(values):
        if value is not None and not isinstance(value, str):
            raise MalformedFileError(path, f"{where}[{index}] is not a string: {value!r}")
        cleaned.append(value or None)  # SEC writes "" for an absent value
    return pd.Series(cleaned, dtype="string")


def _required_text_column(path: Path, values: list[Any], where: str) -> pd.Series:
    series = _text_column(path, values, where)
    missing = series.isna()
    if missing.any():
        raise MalformedFileError(path, f"{where}[{int(missing.idxmax())}] is blank")
    return series


def _accession_column(path: Path, values: list[Any], where: str) -> pd.Series:
    for index, value in enumerate(values):
        if not isinstance(value, str) or not _ACCESSION.match(value):
            raise MalformedFileError(
                path, f"{where}[{index}] is not an accession number: {value!r}"
            )
    return pd.Series(values, dtype="string")


def _date_column(path: Path, values: list[Any], where: str) -> pd.Series:
    dates: list[dt.date | None] = []
    for index, value in enumerate(values):
        if value is not None and not isinstance(value, str):
            raise MalformedFileError(path, f"{where}[{index}] is not a date: {value!r}")
        try:
            dates.append(parse_iso_date(value))
        except ValueError as error:
            raise MalformedFileError(path, f"{where}[{index}] is not a date: {value!r}") from error
    return dates_column(dates)


def _required_date_column(path: Path, values: list[Any], where: str) -> pd.Series:
    series = _date_column(path, values, where)
    missing = series.isna()
    if missing.any():
        raise MalformedFileError(path, f"{where}[{int(missing.idxmax())}] is blank")
    return series


def _timestamp_column(path: Path, values: list[Any], where: str) -> pd.Series:
    for index, value in enumerate(values):
        if value is not None and not isinstance(value, str):
            raise MalformedFileError(path, f"{where}[{index}] is not a timestamp: {value!r}")
    texts = pd.Series([value or None for value in values], dtype=object)
    parsed = pd.to_datetime(texts, format="ISO8601", utc=True, errors="coerce")
    unparsed = parsed.isna() & texts.notna()
    if unparsed.any():
        index = int(unparsed.idxmax())
        raise MalformedFileError(path, f"{where}[{index}] is not a timestamp: {values[index]!r}")
    return parsed.astype(TIMESTAMP_DTYPE)


def _int_column(path: Path, values: list[Any], where: str) -> pd.Series:
    for index, value in enumerate(values):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise MalformedFileError(path, f"{where}[{index}] is not an integer: {value!r}")
    return pd.Series(values, dtype="Int64")


def _bool_column(path: Path, values: list[Any], where: str) -> pd.Series:
    flags = [_sec_flag(path, value, f"{where}[{index}]") for index, value in enumerate(values)]
    return pd.Series(flags, dtype="boolean")


def _sec_flag(path: Path, value: Any, where: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int | str):
        try:
            # SEC writes 0/1 numbers here; parse_sec_bool also takes "true"/"false" text
            return parse_sec_bool(str(value))
        except ValueError:
            pass
    raise MalformedFileError(path, f"{where} is not a boolean: {value!r}")


_CONVERTERS: dict[str, Callable[[Path, list[Any], str], pd.Series]] = {
    "accession": _accession_column,
    "text": _text_column,
    "required_text": _required_text_column,
    "date": _date_column,
    "required_date": _required_date_column,
    "timestamp": _timestamp_column,
    "int": _int_column,
    "bool": _bool_column,
}


def _empty_frame(dtypes: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame({column: pd.Series([], dtype=dtype) for column, dtype in dtypes.items()})
