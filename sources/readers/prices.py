"""End-of-day price files (``contracts/landing/prices.yaml``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from findata.sources.readers.landing_csv import read_landing_csv

FORMAT = "prices"


def read_prices(path: str | Path) -> pd.DataFrame:
    """Read a landing price file, in the project's layout or Quandl WIKI's.

    Returns one row per security and trading date: entity_id (Int64; <NA> in the Quandl layout,
    which carries tickers only), ticker (string, as written, e.g. ``BRK_A``), date
    (datetime64[s]), open, high, low, close, volume, shares_outstanding, dividend, split_ratio
    (float64; the last three <NA>/NaN where the layout has no such column). ``attrs["layout"]``
    names the layout. Raises MalformedFileError for a file that breaks the contract.
    """
    return read_landing_csv(path, FORMAT)
