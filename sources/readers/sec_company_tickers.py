"""Reader for the SEC's company list (``www.sec.gov/files/company_tickers_exchange.json``).

The list is ``{"fields": ["cik", "name", "ticker", "exchange"], "data": [[320193, "Apple Inc.",
"AAPL", "Nasdaq"], ...]}``: every company with a listed ticker today, a row per ticker (a company
with several listed classes has several rows), with no history. The fetch lands a copy of it on
each day it changed as ``sec/company_tickers/company_tickers_exchange.YYYYMMDD.json``, the day it
was seen in the file name, so that the snapshots, in order, say from when to when the SEC listed
each ticker (``int_sec_ticker_periods``).

Quirks handled: the CIK is a JSON number (returned zero padded to 10 digits, as every SEC table
here); an exchange the SEC does not know is ``null`` (returned null); field order is taken from
``fields``, not assumed.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pandas as pd

from findata.sources.readers.coerce import pad_cik, typed_frame
from findata.sources.readers.errors import MalformedFileError
from findata.sources.readers.json_file import load_json_object

#: the fields a company list must have
FIELDS = ("cik", "name", "ticker", "exchange")
#: the columns returned, with their dtypes
COLUMNS = {
    "cik": "string",
    "name": "string",
    "ticker": "string",
    "exchange": "string",
    "seen_on": "date",
}
_SNAPSHOT_NAME = re.compile(r"^company_tickers_exchange\.(\d{8})\.json$")


def snapshot_name(day: dt.date) -> str:
    """The landing file name of the company list as seen on ``day``."""
    return f"company_tickers_exchange.{day:%Y%m%d}.json"


def read_company_list_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a company list file, as dicts of cik (int), name, ticker, exchange (None when
    the SEC gives none); raises :class:`MalformedFileError` for a file not of that shape."""
    document = load_json_object(path)
    fields, data = document.get("fields"), document.get("data")
    if not isinstance(fields, list) or not isinstance(data, list):
        raise MalformedFileError(path, "no 'fields' and 'data' arrays")
    if missing := [name for name in FIELDS if name not in fields]:
        raise MalformedFileError(path, f"fields lack {', '.join(missing)}")
    at = {name: fields.index(name) for name in FIELDS}
    rows = []
    for number, row in enumerate(data):
        if not isinstance(row, list) or len(row) != len(fields):
            raise MalformedFileError(path, f"data[{number}] is not a row of {len(fields)} fields")
        cik, name, ticker = row[at["cik"]], row[at["name"]], row[at["ticker"]]
        is_cik = isinstance(cik, int) and not isinstance(cik, bool) and 0 < cik < 10**10
        if not is_cik or not isinstance(ticker, str) or not ticker.strip():
            raise MalformedFileError(path, f"data[{number}]: no CIK number or ticker")
        rows.append(
            {
                "cik": cik,
                "name": str(name),
                "ticker": ticker.strip(),
                "exchange": row[at["exchange"]] or None,
            }
        )
    return rows


def read_company_tickers(path: str | Path) -> pd.DataFrame:
    """A landed company list snapshot: cik (10 digits), name, ticker, exchange (string) and
    seen_on (the day in the file name), a row per listed ticker."""
    path = Path(path)
    named = _SNAPSHOT_NAME.match(path.name)
    if named is None:
        raise MalformedFileError(path, "not named company_tickers_exchange.YYYYMMDD.json")
    try:
        seen_on = dt.datetime.strptime(named.group(1), "%Y%m%d").date()
    except ValueError:
        raise MalformedFileError(path, f"{named.group(1)} is not a date") from None
    rows = [
        {**row, "cik": pad_cik(row["cik"]), "seen_on": seen_on}
        for row in read_company_list_rows(path)
    ]
    return typed_frame(rows, COLUMNS)
