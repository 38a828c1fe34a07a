"""Corporate action files: splits and cash dividends (contracts/landing/corporate_actions.yaml)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from findata.sources.readers.landing_csv import read_landing_csv

FORMAT = "corporate_actions"


def read_corporate_actions(path: str | Path) -> pd.DataFrame:
    """Read a landing corporate-actions file.

    Returns one row per action: entity_id (Int64), ticker (string), action (string: ``split`` or
    ``dividend``), ex_date, announced (datetime64[s]), ratio, amount (float64; ratio set on
    splits, amount on dividends). Raises MalformedFileError for a file that breaks the contract.
    """
    return read_landing_csv(path, FORMAT)
