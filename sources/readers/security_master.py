"""Security master files: who is who over time (``contracts/landing/security_master.yaml``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from findata.sources.readers.landing_csv import read_landing_csv, zero_padded_ciks

FORMAT = "security_master"


def read_security_master(path: str | Path) -> pd.DataFrame:
    """Read a landing security-master file.

    Returns one row per entity and ticker validity interval, with every column of the contract
    in contract order: entity_id, issuer_entity_id (Int64), valid_from, valid_to
    (datetime64[s]; valid_to <NA> while valid), the rest string, cik zero padded to 10.
    Raises MalformedFileError for a file that breaks the contract.
    """
    frame = read_landing_csv(path, FORMAT)
    frame["cik"] = zero_padded_ciks(frame["cik"])
    return frame
