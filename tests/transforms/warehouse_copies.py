"""A copy of the small demo's build warehouse with more landing files in its raw tables."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pandas as pd
from conftest import run_dbt

from findata.sources.landing import read_source
from findata.sources.raw import write_raw_tables


def warehouse_with_landing_added(
    small_warehouse: Path, landing: Path, source: str, warehouse: Path, *dbt_args: str
) -> None:
    """Copy ``small_warehouse`` to ``warehouse``, add the rows of landing source ``source``'s
    files in ``landing`` to its raw tables, and run dbt with ``dbt_args`` on it (it must
    succeed)."""
    added = read_source(landing, source)
    shutil.copyfile(small_warehouse, warehouse)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        raw = {name: con.execute(f"select * from raw.{name}").df() for name in added}
    write_raw_tables(warehouse, {name: pd.concat([raw[name], added[name]]) for name in added})
    result = run_dbt(warehouse, *dbt_args)
    assert result.returncode == 0, result.stdout[-4000:]
