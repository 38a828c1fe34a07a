"""Raw tables kept with their source's fingerprint (``orchestration/raw.py``): a source read
with the same fingerprint is left as it is, anything else is read again."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from findata.orchestration.raw import (
    forget_landing_fingerprints,
    unchanged_raw_tables,
    write_raw_tables,
)

TABLES = ("prices", "prices_notes")


def _write(database: Path, fingerprint: str | None, rows: int = 3) -> None:
    frames = {
        "prices": pd.DataFrame({"entity_id": range(rows)}),
        "prices_notes": pd.DataFrame({"note": ["a"]}),
    }
    write_raw_tables(database, frames, "prices", fingerprint)


def test_a_source_is_kept_only_with_the_fingerprint_it_was_read_with(tmp_path: Path) -> None:
    database = tmp_path / "warehouse.duckdb"
    assert unchanged_raw_tables(database, "prices", "f1", TABLES) is None  # no warehouse yet
    _write(database, "f1")
    assert unchanged_raw_tables(database, "prices", "f1", TABLES) == {
        "prices": 3,
        "prices_notes": 1,
    }
    assert unchanged_raw_tables(database, "prices", "f2", TABLES) is None  # files or code moved
    assert unchanged_raw_tables(database, "other", "f1", TABLES) is None
    assert unchanged_raw_tables(database, "prices", "f1", (*TABLES, "gone")) is None
    _write(database, "f2", rows=5)  # read again: the new fingerprint replaces the old one
    assert unchanged_raw_tables(database, "prices", "f2", TABLES) == {
        "prices": 5,
        "prices_notes": 1,
    }
    assert unchanged_raw_tables(database, "prices", "f1", TABLES) is None
    forget_landing_fingerprints(database)  # a forced build reads every source again
    assert unchanged_raw_tables(database, "prices", "f2", TABLES) is None
    _write(database, None)  # written without a fingerprint: never taken as unchanged
    assert unchanged_raw_tables(database, "prices", "f2", TABLES) is None
