"""The SQLite Dagster instance findata writes (``orchestration/dagster_sqlite_storage.py``): the
same files Dagster's own SQLite storage reads, committed for other processes (the UI, the
daemon) as each event is stored, with a bounded number of files held open."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from findata.orchestration.dagster_instance import prepare_dagster_home
from findata.orchestration.dagster_sqlite_storage import (
    OPEN_RUN_FILES,
    KeptOpenSqliteEventLogStorage,
)
from findata.settings import Settings


@dg.asset
def counted() -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"rows": 3})


@dg.asset_check(asset=counted)
def counted_has_rows() -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=True)


def _open_database_files() -> int:
    """This process's open file descriptors on SQLite files (database, WAL and shared memory)."""
    held = 0
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        held += target.endswith((".db", ".db-wal", ".db-shm"))
    return held


@pytest.fixture
def instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dg.DagsterInstance:
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    home = prepare_dagster_home(Settings(home=tmp_path / "findata"))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with dg.DagsterInstance.get() as made:
        yield made


def test_events_are_readable_by_another_process_as_soon_as_stored(
    instance: dg.DagsterInstance,
) -> None:
    assert isinstance(instance.event_log_storage, KeptOpenSqliteEventLogStorage)
    result = dg.materialize([counted, counted_has_rows], instance=instance)
    assert result.success
    # a fresh process (as the UI or the daemon would be) reads the run, its materialisation
    # and its check through Dagster's own storage classes, while this one still holds its files
    reader = (
        "import sys, dagster as dg\n"
        "from dagster._core.storage.sqlite_storage import DagsterSqliteStorage\n"
        "storage = DagsterSqliteStorage.from_local(sys.argv[1])\n"
        "events = storage.event_log_storage.get_records_for_run(sys.argv[2]).records\n"
        "kinds = [e.event_log_entry.dagster_event_type for e in events\n"
        "         if e.event_log_entry.dagster_event]\n"
        "print(sorted({str(k) for k in kinds}))\n"
        "key = dg.AssetKey('counted')\n"
        "m = storage.event_log_storage.get_latest_materialization_events([key])\n"
        "print(m[key].run_id)\n"
    )
    home = os.environ["DAGSTER_HOME"]
    out = subprocess.run(
        [sys.executable, "-c", reader, home, result.run_id],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert "DagsterEventType.ASSET_MATERIALIZATION" in out[0]
    assert "DagsterEventType.ASSET_CHECK_EVALUATION" in out[0]
    assert "DagsterEventType.RUN_SUCCESS" in out[0]
    assert out[1] == result.run_id
    check = instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [dg.AssetCheckKey(dg.AssetKey("counted"), "counted_has_rows")]
    )
    assert check[dg.AssetCheckKey(dg.AssetKey("counted"), "counted_has_rows")].run_id == (
        result.run_id
    )


def test_a_long_lived_process_holds_a_bounded_number_of_run_files_open(
    instance: dg.DagsterInstance,
) -> None:
    before = _open_database_files()
    runs = [dg.materialize([counted], instance=instance).run_id for _ in range(OPEN_RUN_FILES + 4)]
    # the index and the most recent runs' files, each a database, its WAL and shared memory
    assert _open_database_files() - before <= 3 * (OPEN_RUN_FILES + 1)
    # a run whose file was closed is read again on demand, in full
    assert instance.get_run_by_id(runs[0]).is_success
    assert any(
        e.dagster_event_type == dg.DagsterEventType.ASSET_MATERIALIZATION
        for e in instance.all_logs(runs[0])
    )
    instance.event_log_storage.dispose()
    assert _open_database_files() <= before
