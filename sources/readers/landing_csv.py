"""Landing CSV files read against their contracts (``contracts/landing/*.yaml``).

Every rule comes from the contract: the columns and their types, required values, ``min`` /
``exclusive_min``, ``allowed``, ``pattern``, ``required_when``, ``ordered`` chains, the ``key``
and the publisher layouts accepted in place of the project's own. Nothing here restates a rule
of a particular format; the per-format readers are thin wrappers around :func:`read_landing_csv`.

Files are parsed by pyarrow (multithreaded, every column read as text, never guessed) and the
checks are vectorised, because the large demo has millions of price rows. Line numbers in
errors are 1-based file lines with the header on line 1; they are worked out only when a file is
rejected, by re-reading it up to the offending rows.
"""

from __future__ import annotations

import codecs
import csv
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from findata.contracts.landing import AlternateLayout, Column, LandingFormat, load_landing_format
from findata.sources.readers.coerce import DATE_DTYPE, parse_iso_date
from findata.sources.readers.errors import MalformedFileError

#: name of the project's own layout (the contract's columns), as put in ``df.attrs["layout"]``
PROJECT_LAYOUT = "findata"

_PROJECT = AlternateLayout(
    name=PROJECT_LAYOUT, description="The contract's own columns.", detect=[]
)
_TEXT = pd.StringDtype("pyarrow")
_SHOWN_ROWS = 5
_INTEGER = r"[+-]?[0-9]{1,18}"  # 18 digits always fit in int64
_NUMBER = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_DTYPES = {"string": "string", "integer": "Int64", "number": "float64", "date": DATE_DTYPE}


@dataclass(frozen=True)
class LandingText:
    """A landing file's rows as text, before typing.

    ``rows`` has one text column per column (pandas string dtype, stripped, empty as <NA>) and a
    RangeIndex; ``records`` gives, for each row, the 0-based data record of the file it came
    from (several rows may share one record when a layout is reshaped), for line numbers.
    """

    path: Path
    encoding: str
    rows: pd.DataFrame
    records: np.ndarray

    def fail(self, problem: str) -> NoReturn:
        """Reject the file with ``problem``."""
        raise MalformedFileError(self.path, problem)

    def fail_rows(self, offending: np.ndarray, rule: str, shown: Sequence[str]) -> NoReturn:
        """Reject the file for the rows where ``offending`` is true, naming ``rule``, the count,
        and the line and the values of the ``shown`` columns of the first few of them."""
        positions = np.flatnonzero(np.asarray(offending, dtype=bool))
        first = positions[:_SHOWN_ROWS]
        lines = file_lines(self.path, self.encoding, self.records[first].tolist())
        details = "; ".join(
            f"line {lines.get(int(self.records[p]), '?')}: "
            + ", ".join(f"{c}={self._text_value(c, p)}" for c in shown)
            for p in first
        )
        more = f" (first {len(first)} shown)" if len(positions) > len(first) else ""
        self.fail(f"{rule} — {len(positions)} offending row(s){more}: {details}")

    def _text_value(self, column: str, position: int) -> str:
        value = self.rows[column].iloc[position] if column in self.rows else pd.NA
        return "(empty)" if pd.isna(value) else repr(str(value))


#: reshapes a publisher layout whose rows are not the contract's rows (see index_membership)
Reshaper = Callable[[LandingText], LandingText]


def read_landing_csv(
    path: str | Path,
    format_name: str,
    *,
    fill: Mapping[str, str] | None = None,
    reshapers: Mapping[str, Reshaper] | None = None,
) -> pd.DataFrame:
    """Read a landing CSV file, check it against its contract and return typed rows.

    The layout is detected from the header: a publisher layout of the contract when all its
    ``detect`` names are present, otherwise the project's own. ``fill`` gives values for
    columns known from outside the file (e.g. the index named by the file name): used when the
    file has no such column or leaves a value empty; a value the file gives must agree.
    ``reshapers`` turns a layout's rows into the contract's rows where renaming is not enough.

    Returns the contract's columns in contract order (integer → Int64, number → float64, date
    → DATE_DTYPE, string → string; optional columns absent from the file are all-null), with
    ``attrs["layout"]`` (``"findata"`` for the project's own) and ``attrs["source_file"]``.
    Raises MalformedFileError for a file that breaks any rule, naming lines and values.
    """
    fmt = load_landing_format(format_name)
    raw = read_text(path, fmt.encoding)
    layout = detect_layout(fmt, list(raw.rows.columns), raw.path)
    reshape = (reshapers or {}).get(layout.name)
    if reshape is not None:
        raw = reshape(raw)
    elif _needs_reshaping(fmt, layout):
        raw.fail(f"layout {layout.name} of {fmt.name} cannot be read by renaming columns")
    text = _conform_columns(raw, fmt, layout, fill or {})
    frame = _typed_and_checked(text, fmt, layout)
    frame.attrs["layout"] = layout.name
    frame.attrs["source_file"] = str(raw.path)
    return frame


def read_header(path: str | Path, encoding: str = "utf-8") -> list[str]:
    """The header names of a CSV file (first line), stripped; raises MalformedFileError if the
    file is empty or not in ``encoding``."""
    return _header_and_whether_rows_follow(Path(path), encoding)[0]


def _header_and_whether_rows_follow(path: Path, encoding: str) -> tuple[list[str], bool]:
    try:
        with path.open(encoding=_header_codec(encoding), newline="") as handle:
            header = next(csv.reader(handle), None)
            rows_follow = False
            while chunk := handle.read(1 << 16):
                if chunk.strip("\r\n"):
                    rows_follow = True
                    break
    except UnicodeDecodeError:
        _fail_encoding(path, encoding)
    except csv.Error as exc:
        raise MalformedFileError(path, f"line 1 (header): not valid CSV: {exc}") from exc
    if header is None:
        raise MalformedFileError(path, "empty file: no header line")
    if not header:
        raise MalformedFileError(path, "line 1 (header) is blank: the header must be line 1")
    return [name.strip() for name in header], rows_follow


def read_text(path: str | Path, encoding: str = "utf-8") -> LandingText:
    """Every row of a CSV file as text (columns named by the header, values stripped, empty as
    <NA>); blank lines are skipped. Raises MalformedFileError for an empty file, duplicate or
    empty header names, a row whose field count differs from the header's, or bad encoding."""
    path = Path(path)
    header, rows_follow = _header_and_whether_rows_follow(path, encoding)
    _check_header_names(path, header)
    if not rows_follow:  # pyarrow cannot read a file that ends after its header
        rows = pd.DataFrame({name: pd.Series([], dtype=_TEXT) for name in header})
        return LandingText(path, encoding, rows, np.arange(0))
    internal = [f"c{i}" for i in range(len(header))]
    invalid_rows: list[str] = []

    def on_invalid_row(row: pacsv.InvalidRow) -> str:
        invalid_rows.append(row.text)
        return "skip"

    try:
        table = pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(
                column_names=internal, skip_rows=1, encoding=_arrow_codec(encoding)
            ),
            parse_options=pacsv.ParseOptions(
                newlines_in_values=True, invalid_row_handler=on_invalid_row
            ),
            convert_options=pacsv.ConvertOptions(
                column_types=dict.fromkeys(internal, pa.string()),
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        if isinstance(exc, UnicodeDecodeError) or "UTF8" in str(exc):
            _fail_encoding(path, encoding)
        raise MalformedFileError(path, f"not a readable CSV file: {exc}") from exc
    if invalid_rows:
        _fail_ragged(path, encoding, len(header), invalid_rows)
    rows = pd.DataFrame(
        {name: _stripped_text(table.column(i)) for i, name in enumerate(header)},
        index=pd.RangeIndex(table.num_rows),
    )
    return LandingText(path, encoding, rows, np.arange(table.num_rows))


def detect_layout(fmt: LandingFormat, header: Sequence[str], path: Path) -> AlternateLayout:
    """The publisher layout whose ``detect`` names are all in ``header``, else the project's."""
    present = set(header)
    matches = [layout for layout in fmt.alternate_layouts if set(layout.detect) <= present]
    if len(matches) > 1:
        names = ", ".join(layout.name for layout in matches)
        raise MalformedFileError(path, f"header matches several {fmt.name} layouts: {names}")
    return matches[0] if matches else _PROJECT


def parse_date_text(text: LandingText, column: str) -> pd.Series:
    """``text``'s column of YYYY-MM-DD strings as DATE_DTYPE (empty → NaT); a value that is not
    a real calendar date rejects the file, naming its line."""
    values, bad = _as_date(text.rows[column])
    if bad.any():
        text.fail_rows(
            bad, f"column {column} must be a real YYYY-MM-DD date [rule: type date]", [column]
        )
    return values


def zero_padded_ciks(values: pd.Series) -> pd.Series:
    """CIK digit strings zero padded to 10 (the form every reader returns); <NA> stays <NA>."""
    return values.astype("string").str.zfill(10)


def file_lines(path: Path, encoding: str, records: Iterable[int]) -> dict[int, int]:
    """The 1-based file line on which each 0-based data record starts (header on line 1),
    counting blank lines and line breaks inside quoted values as the parser does."""
    wanted = set(records)
    found: dict[int, int] = {}
    if not wanted:
        return found
    with path.open(encoding=_header_codec(encoding), newline="") as handle:
        reader = csv.reader(handle)
        next(reader, None)
        record, lines_read = 0, reader.line_num
        for row in reader:
            start, lines_read = lines_read + 1, reader.line_num
            if not row:  # blank line: skipped by the parser, not a record
                continue
            if record in wanted:
                found[record] = start
                if len(found) == len(wanted):
                    break
            record += 1
    return found


# --- reading -----------------------------------------------------------------------------


def _stripped_text(column: pa.ChunkedArray) -> pd.Series:
    trimmed = pc.utf8_trim_whitespace(column)
    nulled = pc.if_else(pc.equal(trimmed, ""), pa.scalar(None, pa.string()), trimmed)
    return pd.Series(pd.arrays.ArrowStringArray(nulled), dtype=_TEXT)


def _check_header_names(path: Path, header: list[str]) -> None:
    blanks = [str(i + 1) for i, name in enumerate(header) if not name]
    if blanks:
        raise MalformedFileError(
            path, f"line 1 (header): empty column name at position(s) {', '.join(blanks)}"
        )
    duplicates = sorted({name for name in header if header.count(name) > 1})
    if duplicates:
        raise MalformedFileError(
            path, f"line 1 (header): duplicate column(s) {', '.join(duplicates)}"
        )


def _fail_ragged(path: Path, encoding: str, width: int, invalid_rows: list[str]) -> NoReturn:
    shown: list[str] = []
    with path.open(encoding=_header_codec(encoding), newline="") as handle:
        reader = csv.reader(handle)
        next(reader, None)
        lines_read = reader.line_num
        for row in reader:
            start, lines_read = lines_read + 1, reader.line_num
            if row and len(row) != width:
                shown.append(f"line {start} has {len(row)} fields")
                if len(shown) == _SHOWN_ROWS:
                    break
    if not shown:  # the two parsers disagree on where: show the rows' text instead
        shown = [repr(text) for text in invalid_rows[:_SHOWN_ROWS]]
    raise MalformedFileError(
        path,
        f"ragged rows: the header has {width} fields; {len(invalid_rows)} row(s) do not "
        f"({'; '.join(shown)})",
    )


def _fail_encoding(path: Path, encoding: str) -> NoReturn:
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                line.decode(encoding)
            except UnicodeDecodeError as exc:
                bad = line[exc.start : exc.end]
                raise MalformedFileError(
                    path,
                    f"line {number}: not valid {encoding} (bytes {bad!r} at column "
                    f"{exc.start + 1})",
                ) from None
    raise MalformedFileError(path, f"not valid {encoding}")


def _header_codec(encoding: str) -> str:
    # a UTF-8 byte-order mark is not part of the first column name
    return "utf-8-sig" if codecs.lookup(encoding).name == "utf-8" else encoding


def _arrow_codec(encoding: str) -> str:
    # pyarrow validates "utf8" natively; any other name would go through Python transcoding
    return "utf8" if codecs.lookup(encoding).name == "utf-8" else encoding


# --- columns -----------------------------------------------------------------------------


def _needs_reshaping(fmt: LandingFormat, layout: AlternateLayout) -> bool:
    names = set(fmt.column_names) | set(layout.rename) | set(layout.drop)
    return not set(layout.detect) <= names


def _conform_columns(
    raw: LandingText, fmt: LandingFormat, layout: AlternateLayout, fill: Mapping[str, str]
) -> LandingText:
    header = list(raw.rows.columns)
    kept = [name for name in header if name not in layout.drop]
    renamed = {name: layout.rename.get(name, name) for name in kept}
    known = set(fmt.column_names)
    unknown = [name for name in kept if renamed[name] not in known]
    targets = list(renamed.values())
    collisions = sorted({name for name in targets if targets.count(name) > 1})
    present = set(targets) | set(fill)
    missing = [
        c.name
        for c in fmt.columns
        if c.required and c.name not in present and c.name not in layout.nullable
    ]
    problems = []
    if missing:
        problems.append(f"missing required column(s): {', '.join(missing)}")
    if unknown:
        problems.append(f"unknown column(s): {', '.join(unknown)}")
    if collisions:
        problems.append(f"column(s) given twice after renaming: {', '.join(collisions)}")
    if problems:
        raw.fail(f"line 1 (header): {'; '.join(problems)} — {_layouts_accepted(fmt, layout)}")
    rows = raw.rows[kept].rename(columns=renamed)
    text = LandingText(raw.path, raw.encoding, rows, raw.records)
    for name, value in fill.items():
        text = _filled(text, name, value)
    return text


def _layouts_accepted(fmt: LandingFormat, layout: AlternateLayout) -> str:
    others = "; ".join(
        f"{alt.name} (detected by {', '.join(alt.detect)})" for alt in fmt.alternate_layouts
    )
    accepted = f"{PROJECT_LAYOUT} (columns {', '.join(fmt.column_names)})"
    if others:
        accepted += f"; {others}"
    return f"read as layout {layout.name}; {fmt.name} accepts {accepted}"


def _filled(text: LandingText, name: str, value: str) -> LandingText:
    rows = text.rows
    if name in rows:
        given = rows[name]
        differs = (given.notna() & (given != value)).to_numpy(dtype=bool, na_value=False)
        if differs.any():
            text.fail_rows(
                differs,
                f"column {name} disagrees with {value!r} named by the caller or the file name",
                [name],
            )
        filled = given.fillna(value)
    else:
        filled = pd.Series(value, index=rows.index, dtype=_TEXT)
    return LandingText(text.path, text.encoding, rows.assign(**{name: filled}), text.records)


# --- typing ------------------------------------------------------------------------------


def _typed_and_checked(
    text: LandingText, fmt: LandingFormat, layout: AlternateLayout
) -> pd.DataFrame:
    typed: dict[str, pd.Series] = {}
    for column in fmt.columns:
        if column.name in text.rows:
            typed[column.name] = _typed_column(text, column)
        else:
            typed[column.name] = _all_null(column, len(text.rows))
    # one block per column: building the frame from a dict would copy every float column
    # into one consolidated block, which costs seconds on millions of rows
    frame = pd.DataFrame(index=text.rows.index)
    for name, values in typed.items():
        frame[name] = values
    for check in _CHECKS:
        check(text, frame, fmt, layout)
    return frame


def _all_null(column: Column, length: int) -> pd.Series:
    if column.type == "date":
        return pd.Series(np.full(length, np.datetime64("NaT"), dtype=DATE_DTYPE))
    if column.type == "number":
        return pd.Series(np.full(length, np.nan), dtype="float64")
    return pd.Series([pd.NA] * length, dtype=_DTYPES[column.type])


def _typed_column(text: LandingText, column: Column) -> pd.Series:
    values = text.rows[column.name]
    if column.type == "string":
        return values.astype("string")
    if column.type == "date":
        return parse_date_text(text, column.name)
    if column.type == "integer":
        typed, bad, what = *_as_integer(values), "an integer"
    else:
        typed, bad, what = *_as_number(values), "a number"
    if bad.any():
        text.fail_rows(
            bad, f"column {column.name} must be {what} [rule: type {column.type}]", [column.name]
        )
    return typed


def _as_integer(values: pd.Series) -> tuple[pd.Series, np.ndarray]:
    # the pattern first: arrow's cast alone would take hexadecimal ("0x10")
    text = values.array.__arrow_array__()
    looks_right = pc.match_substring_regex(text, f"^{_INTEGER}$")
    bad = pc.invert(pc.fill_null(looks_right, True)).to_numpy(zero_copy_only=False)
    kept = pc.if_else(looks_right, text, pa.scalar(None, text.type))
    numbers = pc.cast(kept, pa.int64())
    missing = pc.is_null(numbers).to_numpy(zero_copy_only=False)
    digits = pc.fill_null(numbers, 0).to_numpy(zero_copy_only=False)
    return pd.Series(pd.arrays.IntegerArray(digits, missing), index=values.index), bad


def _as_number(values: pd.Series) -> tuple[pd.Series, np.ndarray]:
    text = values.array.__arrow_array__()
    given = pc.is_valid(text).to_numpy(zero_copy_only=False)
    try:  # fast path: arrow parses every value
        numbers = pc.cast(text, pa.float64()).to_numpy(zero_copy_only=False)
        bad = given & ~np.isfinite(numbers)  # "nan", "inf" are not numbers here
    except pa.ArrowInvalid:  # find the offending values
        looks_right = pc.match_substring_regex(text, f"^{_NUMBER}$")
        kept = pc.if_else(looks_right, text, pa.scalar(None, text.type))
        numbers = pc.cast(kept, pa.float64()).to_numpy(zero_copy_only=False)
        bad = given & ~np.isfinite(numbers)
    return pd.Series(numbers, index=values.index, dtype="float64"), bad


def _as_date(values: pd.Series) -> tuple[pd.Series, np.ndarray]:
    # dates repeat a lot (one per trading day): parse each distinct text once
    codes, distinct = pd.factorize(values)
    parsed = np.empty(len(distinct), dtype=DATE_DTYPE)
    valid = np.ones(len(distinct), dtype=bool)
    for i, value in enumerate(distinct):
        try:
            day = parse_iso_date(str(value))
        except ValueError:
            day = None
        valid[i] = day is not None
        parsed[i] = np.datetime64(day, "s") if day is not None else np.datetime64("NaT")
    known = codes >= 0
    safe = np.where(known, codes, 0)
    if not len(distinct):  # every value empty
        return pd.Series(
            np.full(len(codes), np.datetime64("NaT"), dtype=DATE_DTYPE), index=values.index
        ), np.zeros(len(codes), dtype=bool)
    taken = np.where(known, parsed[safe], np.datetime64("NaT"))
    bad = known & ~valid[safe]
    return pd.Series(taken.astype(DATE_DTYPE), index=values.index), bad


# --- rules -------------------------------------------------------------------------------


def _check_required(
    text: LandingText, frame: pd.DataFrame, fmt: LandingFormat, layout: AlternateLayout
) -> None:
    # key columns too: a null key part is allowed only where the layout cannot fill it
    for column in fmt.columns:
        needed = column.required or column.name in fmt.key
        if needed and column.name not in layout.nullable:
            missing = frame[column.name].isna().to_numpy()
            if missing.any():
                text.fail_rows(
                    missing,
                    f"column {column.name} must have a value [rule: required]",
                    [column.name],
                )


def _check_min(
    text: LandingText, frame: pd.DataFrame, fmt: LandingFormat, layout: AlternateLayout
) -> None:
    for column in fmt.columns:
        if column.min is None:
            continue
        values = frame[column.name].to_numpy(dtype="float64", na_value=np.nan)
        with np.errstate(invalid="ignore"):
            below = values <= column.min if column.exclusive_min else values < column.min
        if below.any():
            sign, rule = (">", "exclusive_min") if column.exclusive_min else (">=", "min")
            text.fail_rows(
                below,
                f"column {column.name} must be {sign} {column.min:g} [rule: {rule}]",
                [column.name],
            )


def _check_allowed(
    text: LandingText, frame: pd.DataFrame, fmt: LandingFormat, layout: AlternateLayout
) -> None:
    for column in fmt.columns:
        if column.allowed is None:
            continue
        values = frame[column.name]
        outside = (values.notna() & ~values.isin(column.allowed)).to_numpy(dtype=bool)
        if outside.any():
            text.fail_rows(
                outside,
                f"column {column.name} must be one of {', '.join(column.allowed)} [rule: allowed]",
                [column.name],
            )


def _check_pattern(
    text: LandingText, frame: pd.DataFrame, fmt: LandingFormat, layout: AlternateLayout
) -> None:
    for column in fmt.columns:
        if column.pattern is None or column.name not in text.rows:
            continue
        matches = text.rows[column.name].str.fullmatch(column.pattern)
        mismatched = (~matches.fillna(True)).to_numpy(dtype=bool)
        if mismatched.any():
            text.fail_rows(
                mismatched,
                f"column {column.name} must match {column.pattern} [rule: pattern]",
                [column.name],
            )


def _check_required_when(
    text: LandingText, frame: pd.DataFrame, fmt: LandingFormat, layout: AlternateLayout
) -> None:
    for rule in fmt.required_when:
        applies = np.ones(len(frame), dtype=bool)
        for name, value in rule.when.items():
            given = text.rows[name] if name in text.rows else frame[name].astype("string")
            applies &= (given == value).to_numpy(dtype=bool, na_value=False)
        missing = applies & frame[rule.column].isna().to_numpy()
        if missing.any():
            when = " and ".join(f"{k} is {v}" for k, v in rule.when.items())
            text.fail_rows(
                missing,
                f"column {rule.column} must have a value when {when} [rule: required_when]",
                [*rule.when, rule.column],
            )


def _check_ordered(
    text: LandingText, frame: pd.DataFrame, fmt: LandingFormat, layout: AlternateLayout
) -> None:
    # a chain is non-decreasing with nulls skipped exactly when every pair in it is ordered
    for chain in fmt.ordered:
        for earlier, later in itertools.combinations(chain, 2):
            a, b = frame[earlier], frame[later]
            reversed_ = (a.notna() & b.notna() & (a > b)).to_numpy(dtype=bool, na_value=False)
            if reversed_.any():
                text.fail_rows(
                    reversed_,
                    f"{earlier} > {later}; {' <= '.join(chain)} must be non-decreasing "
                    f"along the row [rule: ordered]",
                    [earlier, later],
                )


def _check_key(
    text: LandingText, frame: pd.DataFrame, fmt: LandingFormat, layout: AlternateLayout
) -> None:
    # a layout that cannot fill the format's key names its own; as in SQL, a row with a null
    # key part (allowed only in such layouts) equals no other row
    key = layout.key or fmt.key
    keyed = frame[key]
    complete = keyed.notna().all(axis=1).to_numpy()
    duplicated = np.zeros(len(frame), dtype=bool)
    duplicated[complete] = keyed[complete].duplicated(keep=False).to_numpy()
    if duplicated.any():
        text.fail_rows(duplicated, f"key ({', '.join(key)}) must be unique [rule: key]", key)


_CHECKS = (
    _check_required,
    _check_min,
    _check_allowed,
    _check_pattern,
    _check_required_when,
    _check_ordered,
    _check_key,
)
