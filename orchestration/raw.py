"""Raw tables: landing read by the real-format readers, stored as is in the build DuckDB.

Each landing source becomes tables ``raw.<table>`` (see ``findata.orchestration.landing``), replaced
whole on every run; dbt's staging models read them as sources.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd

RAW_SCHEMA = "raw"


def write_raw_tables(database: Path, tables: dict[str, pd.DataFrame]) -> dict[str, int]:
    """Replace ``raw.<name>`` with each frame in one transaction; returns rows per table."""
    database.parent.mkdir(parents=True, exist_ok=True)
    with duckdb.connect(str(database)) as con:
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {RAW_SCHEMA}")
        con.execute("BEGIN TRANSACTION")
        for name, frame in tables.items():
            con.register("frame_to_load", frame)
            con.execute(
                f'CREATE OR REPLACE TABLE {RAW_SCHEMA}."{name}" AS SELECT * FROM frame_to_load'
            )
            con.unregister("frame_to_load")
        con.execute("COMMIT")
    return {name: len(frame) for name, frame in tables.items()}
