"""Raw tables kept with their source's fingerprint (``sources/raw.py``): a source read
with the same fingerprint is left as it is, anything else is read again; and the step that reads
them (``assets/raw.py``) on a selection of raw tables."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import dagster as dg
import duckdb
import pandas as pd
import pytest

from findata.demo.generate import generate_demo
from findata.orchestration.assets.raw import raw_asset_key, raw_tables
from findata.orchestration.refresh_lock import REFRESH_LOCK, refresh_lock, refresh_lock_path
from findata.settings import get_settings
from findata.sources.raw import (
    RAW_SCHEMA,
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


def test_a_selection_of_raw_tables_reads_their_sources_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One step reads every source; a selection (a raw table materialized from the UI) reads
    the sources of the tables selected, and reports those tables alone: a source's other tables
    are written with them, from the same files."""
    home = tmp_path / "home"
    generate_demo(home / "landing", home / "demo", today=dt.date(2025, 6, 2))
    monkeypatch.setenv("FINDATA_HOME", str(home))
    selection = [raw_asset_key("form4_owners"), raw_asset_key("security_master")]
    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize(
            [raw_tables],
            selection=selection,
            instance=instance,
            resources={REFRESH_LOCK: refresh_lock},
        )
    assert result.success
    # a run of a subset of the job holds the home's refresh lock too
    assert (
        refresh_lock_path(get_settings()).read_text() == f"run {result.run_id}, pid {os.getpid()}"
    )
    reported = [e.asset_key for e in result.get_asset_materialization_events()]
    assert sorted(reported) == sorted(selection)
    warehouse = get_settings().warehouse_path
    with duckdb.connect(str(warehouse), read_only=True) as con:
        tables = {
            name
            for (name,) in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = ?",
                [RAW_SCHEMA],
            ).fetchall()
        }
    assert {"form4_filings", "form4_owners", "form4_lines", "security_master"} <= tables
    assert not tables & {"prices", "sec_facts", "form13f_holdings"}
