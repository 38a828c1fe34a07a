"""Small value conversions every reader shares (dates, booleans, CIKs, numbers)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import numpy as np
import pandas as pd

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

#: dtype used for every date column a reader returns
DATE_DTYPE = "datetime64[s]"


def parse_iso_date(text: str | None) -> dt.date | None:
    """``YYYY-MM-DD`` (a real calendar date) to a date; blank gives None; anything else raises."""
    if text is None:
        return None
    text = text.strip()
    if not text:
        return None
    if not _ISO_DATE.match(text):
        raise ValueError(f"not a YYYY-MM-DD date: {text!r}")
    return dt.date.fromisoformat(text)


def parse_sec_bool(text: str | None) -> bool | None:
    """SEC booleans: ``1``/``0`` or ``true``/``false`` (any case); blank gives None."""
    if text is None:
        return None
    value = text.strip().lower()
    if value in ("1", "true", "y", "yes"):
        return True
    if value in ("0", "false", "n", "no"):
        return False
    if value == "":
        return None
    raise ValueError(f"not a boolean: {text!r}")


def pad_cik(cik: str | int) -> str:
    """A CIK zero padded to 10 digits (SEC writes both padded and unpadded forms)."""
    digits = str(cik).strip()
    if not digits.isdigit() or len(digits) > 10:
        raise ValueError(f"not a CIK: {cik!r}")
    return digits.zfill(10)


def parse_number(text: str | None) -> float | None:
    """A decimal number (commas as thousands separators allowed); blank gives None."""
    if text is None:
        return None
    value = text.strip().replace(",", "")
    if not value:
        return None
    return float(value)


def dates_column(values: list[dt.date | None]) -> pd.Series:
    """A list of dates as a ``DATE_DTYPE`` series; None (or NaN/NaT, unequal to itself) is NaT."""
    return pd.Series(_dates_array(values), dtype=DATE_DTYPE)


def _dates_array(values: list[dt.date | None]) -> np.ndarray:
    # numpy directly: pd.to_datetime on a list of objects costs ~1 ms a call, per file read
    not_a_time = np.datetime64("NaT", "s")
    return np.array(
        [not_a_time if v is None or v != v else np.datetime64(v, "s") for v in values],
        dtype=DATE_DTYPE,
    )


def typed_frame(rows: list[dict[str, Any]], columns: dict[str, str]) -> pd.DataFrame:
    """Rows of plain Python values as a DataFrame with exactly ``columns`` (name → dtype).

    dtype ``"date"`` means ``datetime.date`` values stored as ``DATE_DTYPE``; any other dtype is
    given to pandas as is. An empty ``rows`` still yields every column with its dtype, so readers
    return the same shape for a filing with no lines as for one with many.
    """
    # arrays, not Series, and no copy: a filing's frames have a few rows, and building a Series
    # per column was most of the time a Form 4 took to read (0.7 -> 0.3 ms a frame)
    data: dict[str, Any] = {}
    for column, dtype in columns.items():
        values = [row.get(column) for row in rows]
        if dtype == "date":
            data[column] = _dates_array(values)
        else:
            data[column] = pd.array(values, dtype=dtype)
    return pd.DataFrame(data, index=pd.RangeIndex(len(rows)), copy=False)
