"""Readers for the SEC Financial Statement Data Sets: ``sub.txt``, ``num.txt``, ``pre.txt``.

Each quarter's zip holds tab-separated text files with one header line and no quoting (a ``"``
in a label is just a character). Excerpts (``num_excerpt_*.txt``, ``pre_excerpt_*.txt``) have
the same columns. The column lists below follow SEC's data set documentation (aqfs.pdf).

Decisions:

* Every value is read as text first (pandas never guesses a type), then converted by the
  column's declared kind, so ``adsh``, ``zipba``, ``ein``, ``coreg``, ``segments`` and ``fye``
  keep their leading zeros and punctuation. Empty fields become null.
* ``cik`` becomes a 10-digit string; ``yyyymmdd`` fields (``changed``, ``period``, ``filed``,
  ``ddate``) become ``DATE_DTYPE``; ``wksi``/``prevrpt``/``detail``/``inpth``/``negating``
  (written ``0``/``1``, or ``true``/``false`` in some releases) become pandas ``boolean``.
* ``accepted`` (``2009-07-22 16:42:00.0``) is EDGAR's acceptance time, which EDGAR keeps in US
  Eastern time; it is localised to ``America/New_York`` and returned in UTC, the same dtype
  the submissions reader gives ``acceptanceDateTime``.
* Encoding: SEC publishes these files as UTF-8, but copies of older quarters exist in latin-1.
  A file is decoded as UTF-8 (a byte-order mark is ignored); if that fails it is decoded as
  latin-1, which accepts every byte, so such a file still loads with its accents intact.
* ``segments`` arrived in num.txt with SEC's 2024 re-issue; a num.txt in the older layout is
  accepted and gets an all-null ``segments`` column. Any other missing column is an error.
  Columns SEC may add later are kept, as text, after the known ones.
* A line with more or fewer fields than the header is an error naming the line.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd
from pandas.errors import ParserError

from findata.sources.readers.coerce import DATE_DTYPE
from findata.sources.readers.errors import MalformedFileError

#: dtype of ``accepted`` (same as the submissions reader's ``acceptance_datetime``)
TIMESTAMP_DTYPE = "datetime64[ms, UTC]"
#: time zone EDGAR writes acceptance times in
EDGAR_TIME_ZONE = "America/New_York"

_DTYPES = {
    "text": "string",
    "cik": "string",
    "int": "Int64",
    "float": "float64",
    "date": DATE_DTYPE,
    "timestamp": TIMESTAMP_DTYPE,
    "bool": "boolean",
}

#: sub.txt columns (SEC's names, SEC's order) and the kind each is converted to
SUB_COLUMNS: dict[str, str] = {
    "adsh": "text",
    "cik": "cik",
    "name": "text",
    "sic": "int",
    "countryba": "text",
    "stprba": "text",
    "cityba": "text",
    "zipba": "text",
    "bas1": "text",
    "bas2": "text",
    "baph": "text",
    "countryma": "text",
    "stprma": "text",
    "cityma": "text",
    "zipma": "text",
    "mas1": "text",
    "mas2": "text",
    "countryinc": "text",
    "stprinc": "text",
    "ein": "text",
    "former": "text",
    "changed": "date",
    "afs": "text",
    "wksi": "bool",
    "fye": "text",
    "form": "text",
    "period": "date",
    "fy": "int",
    "fp": "text",
    "filed": "date",
    "accepted": "timestamp",
    "prevrpt": "bool",
    "detail": "bool",
    "instance": "text",
    "nciks": "int",
    "aciks": "text",
}

#: num.txt columns
NUM_COLUMNS: dict[str, str] = {
    "adsh": "text",
    "tag": "text",
    "version": "text",
    "ddate": "date",
    "qtrs": "int",
    "uom": "text",
    "segments": "text",
    "coreg": "text",
    "value": "float",
    "footnote": "text",
}

#: pre.txt columns
PRE_COLUMNS: dict[str, str] = {
    "adsh": "text",
    "report": "int",
    "line": "int",
    "stmt": "text",
    "inpth": "bool",
    "rfile": "text",
    "tag": "text",
    "version": "text",
    "plabel": "text",
    "negating": "bool",
}

_SUB_KEYS = ("adsh", "cik", "name", "form", "period", "filed")
_NUM_KEYS = ("adsh", "tag", "version", "ddate", "qtrs", "uom")
_PRE_KEYS = ("adsh", "report", "line", "tag", "version")
#: columns a file may lack (older layouts); they come back all null
_NUM_OPTIONAL = frozenset({"segments"})

_TRUE = frozenset({"1", "true"})
_FALSE = frozenset({"0", "false"})


def read_fsds_sub(path: str | Path) -> pd.DataFrame:
    """Read ``sub.txt``: one row per submission, columns :data:`SUB_COLUMNS` typed by kind.

    cik is a 10-digit string; sic, fy, nciks Int64; changed, period, filed ``DATE_DTYPE``;
    accepted UTC timestamp; wksi, prevrpt, detail boolean; every other column string.
    """
    return _read_table(Path(path), SUB_COLUMNS, _SUB_KEYS, frozenset())


def read_fsds_num(path: str | Path) -> pd.DataFrame:
    """Read ``num.txt`` (or an excerpt): one row per value, columns :data:`NUM_COLUMNS`.

    ddate ``DATE_DTYPE``; qtrs Int64; value float64; adsh, tag, version, uom, segments,
    coreg, footnote string.
    """
    return _read_table(Path(path), NUM_COLUMNS, _NUM_KEYS, _NUM_OPTIONAL)


def read_fsds_pre(path: str | Path) -> pd.DataFrame:
    """Read ``pre.txt`` (or an excerpt): one row per statement line, columns :data:`PRE_COLUMNS`.

    report, line Int64; inpth, negating boolean; adsh, stmt, rfile, tag, version, plabel
    string.
    """
    return _read_table(Path(path), PRE_COLUMNS, _PRE_KEYS, frozenset())


def _read_table(
    path: Path, kinds: dict[str, str], keys: tuple[str, ...], optional: frozenset[str]
) -> pd.DataFrame:
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise MalformedFileError(path, f"cannot read file: {error}") from error
    header = _header_of(path, raw)
    missing = [name for name in kinds if name not in header and name not in optional]
    if missing:
        raise MalformedFileError(
            path, f"header lacks column(s) {', '.join(missing)}; header is {header}"
        )
    text = _read_as_text(path, raw, header)
    _check_field_counts(path, raw, len(header), len(text))
    frame: dict[str, pd.Series] = {}
    for name, kind in kinds.items():
        if name in text.columns:
            frame[name] = _convert(path, text[name], name, kind)
        else:
            frame[name] = pd.Series(pd.NA, index=text.index, dtype=_DTYPES[kind])
    for name in header:
        if name not in kinds:  # a column SEC added later: keep it, as text
            frame[name] = _convert(path, text[name], name, "text")
    typed = pd.DataFrame(frame, index=text.index)
    _check_keys(path, typed, keys)
    return typed.reset_index(drop=True)


def _header_of(path: Path, raw: bytes) -> list[str]:
    first_line = raw.split(b"\n", 1)[0].rstrip(b"\r")
    header = _decode(first_line).split("\t")
    if not first_line.strip():
        raise MalformedFileError(path, "empty file or blank header line")
    if len(set(header)) != len(header):
        raise MalformedFileError(path, f"header repeats a column name: {header}")
    return header


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _read_as_text(path: Path, raw: bytes, header: list[str]) -> pd.DataFrame:
    """Every field as a Python string ('' for empty): no type guessing, no NA guessing."""
    for encoding in ("utf-8-sig", "latin-1"):
        try:
            return pd.read_csv(
                io.BytesIO(raw),
                sep="\t",
                header=0,
                names=header,
                dtype=dict.fromkeys(header, object),
                quoting=csv.QUOTE_NONE,
                na_filter=False,
                keep_default_na=False,
                encoding=encoding,
                engine="c",
            )
        except UnicodeDecodeError:
            continue  # not UTF-8: older SEC copies are latin-1, which decodes any byte
        except ParserError as error:
            raise MalformedFileError(path, f"not a tab-separated table: {error}") from error
    raise AssertionError("latin-1 decodes every byte")  # pragma: no cover


def _check_field_counts(path: Path, raw: bytes, columns: int, rows: int) -> None:
    """Catch lines with too few fields, which the CSV parser silently pads.

    Counting tabs over the whole file is one fast pass; only when the total is off are the
    lines scanned to name the first bad one.
    """
    if raw.count(b"\t") == (columns - 1) * (rows + 1):
        return
    for number, line in enumerate(raw.split(b"\n"), start=1):
        fields = line.count(b"\t") + 1
        if line.strip(b"\r") and fields != columns:
            raise MalformedFileError(
                path, f"line {number} has {fields} fields, header has {columns}"
            )


def _convert(path: Path, texts: pd.Series, name: str, kind: str) -> pd.Series:
    text = texts.astype("string")
    blank = text.str.len() == 0
    text = text.mask(blank)
    if kind == "text":
        return text
    if kind == "cik":
        valid = text.str.fullmatch(r"\d{1,10}") | blank
        _fail_on(path, texts, name, ~valid, "not a CIK")
        return text.str.zfill(10)
    if kind == "bool":
        lowered = text.str.lower()
        valid = lowered.isin(_TRUE | _FALSE) | blank
        _fail_on(path, texts, name, ~valid, "not a 0/1 flag")
        return lowered.isin(_TRUE).astype("boolean").mask(blank)
    if kind in ("int", "float"):
        numbers = pd.to_numeric(text, errors="coerce").astype("float64")
        _fail_on(path, texts, name, numbers.isna() & ~blank, "not a number")
        if kind == "float":
            return numbers
        _fail_on(path, texts, name, (numbers % 1 != 0) & ~blank, "not an integer")
        return numbers.astype("Int64")
    if kind == "date":
        shaped = text.str.fullmatch(r"\d{8}").fillna(False).astype(bool)
        dates = pd.to_datetime(text.where(shaped), format="%Y%m%d", errors="coerce")
        _fail_on(path, texts, name, dates.isna() & ~blank, "not a yyyymmdd date")
        return dates.astype(DATE_DTYPE)
    if kind == "timestamp":
        stamps = pd.to_datetime(text, format="ISO8601", errors="coerce")
        _fail_on(path, texts, name, stamps.isna() & ~blank, "not a yyyy-mm-dd hh:mm:ss time")
        try:
            local = stamps.dt.tz_localize(EDGAR_TIME_ZONE, ambiguous="raise", nonexistent="raise")
        except (ValueError, TypeError) as error:
            raise MalformedFileError(path, f"column {name}: {error}") from error
        return local.dt.tz_convert("UTC").astype(TIMESTAMP_DTYPE)
    raise ValueError(f"unknown column kind {kind!r}")  # a bug in the column tables above


def _fail_on(path: Path, texts: pd.Series, name: str, bad: pd.Series, problem: str) -> None:
    if bad.any():
        first = bad.idxmax()
        # the index is the data row number from 0; the header is line 1
        raise MalformedFileError(
            path, f"line {int(first) + 2}, column {name}: {problem}: {texts[first]!r}"
        )


def _check_keys(path: Path, frame: pd.DataFrame, keys: tuple[str, ...]) -> None:
    for name in keys:
        missing = frame[name].isna()
        if missing.any():
            raise MalformedFileError(
                path, f"line {int(missing.idxmax()) + 2}, column {name}: blank, but required"
            )
