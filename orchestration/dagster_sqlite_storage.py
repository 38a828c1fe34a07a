"""Dagster's SQLite instance storage, with the event log's connections kept open.

Dagster's ``SqliteEventLogStorage`` makes a new SQLAlchemy engine, opens the database file,
commits (an fsync) and disposes of the engine for every statement: a refresh stores some 400
events (each model's planned and done materialisation, each dbt test's planned and done asset
check), and on this 2-core machine that was 2-4 s of a 10 s one-day refresh. Here each database
file (the index and a run's own file) keeps one engine with one open connection, reused under the
storage's lock as Dagster already serialises its use, and commits without waiting for the disk
(``synchronous=NORMAL`` in the WAL mode Dagster puts these files in: a commit survives the
process dying, only an operating-system crash may lose the last few events of a run history).
The rows, files and schema are Dagster's own; the UI and ``dagster`` commands read them as usual.

Only the SQLite default uses this (``orchestration/dagster_instance.py``); on PostgreSQL Dagster
keeps a pool of its own.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SQLITE_BUSY_TIMEOUT_SECONDS,
    SqliteEventLogStorage,
)
from dagster._core.storage.runs import SqliteRunStorage
from dagster._core.storage.schedules import SqliteScheduleStorage
from dagster._core.storage.sqlite_storage import (
    DagsterSqliteStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)
from dagster._serdes import ConfigurableClassData
from sqlalchemy.pool import StaticPool

#: run files whose engines stay open besides the index's (a long-lived webserver or daemon
#: reads many runs' files; each open engine holds a file handle)
OPEN_RUN_FILES = 8


class KeptOpenSqliteEventLogStorage(SqliteEventLogStorage):
    """Dagster's SQLite event log, each database file on one kept-open connection."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines: OrderedDict[str, sa.Engine] = OrderedDict()
        self._engines_pid = os.getpid()
        self._tables_seen: set[str] = set()
        super().__init__(base_dir, inst_data)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[sa.Connection]:
        with self._db_lock:
            engine = self._engine_for(shard)
            with engine.connect() as connection, connection.begin():
                yield connection

    def _engine_for(self, shard: str) -> sa.Engine:
        """The shard's engine, made (and its database initialised) on first use."""
        if self._engines_pid != os.getpid():
            # a forked child must not share its parent's open SQLite connections
            self._engines = OrderedDict()
            self._engines_pid = os.getpid()
        engine = self._engines.get(shard)
        if engine is not None:
            self._engines.move_to_end(shard)
            return engine
        engine = sa.create_engine(
            self.conn_string_for_shard(shard),
            poolclass=StaticPool,
            # the one connection is used under the storage's lock from whichever thread holds it
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
        )
        sa.event.listen(engine, "connect", _commit_without_waiting_for_disk)
        if shard not in self._initialized_dbs:
            self._initdb(engine)
            self._initialized_dbs.add(shard)
        self._engines[shard] = engine
        self._close_least_recent_run_files()
        return engine

    def _close_least_recent_run_files(self) -> None:
        run_files = [shard for shard in self._engines if shard != INDEX_SHARD_NAME]
        for shard in run_files[: max(0, len(run_files) - OPEN_RUN_FILES)]:
            self._engines.pop(shard).dispose()

    def has_table(self, table_name: str) -> bool:
        """Whether the index has the table; asked per asset-check event, and a table once there
        stays (Dagster's migrations add tables), so a yes is remembered."""
        # a set's lookup and add are each atomic: two threads asking at once both ask Dagster
        if table_name in self._tables_seen:
            return True
        present = super().has_table(table_name)
        if present:
            self._tables_seen.add(table_name)
        return present

    def dispose(self) -> None:
        """Close every kept engine, then what Dagster's storage holds."""
        with self._db_lock:
            while self._engines:
                self._engines.popitem()[1].dispose()
        super().dispose()


def _commit_without_waiting_for_disk(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


class KeptOpenSqliteStorage(DagsterSqliteStorage):
    """Dagster's SQLite storage (runs, event log, schedules under ``base_dir``, the same files
    as ``storage: sqlite``) with the kept-open event log."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self.base_dir = base_dir
        self._run_storage = SqliteRunStorage.from_local(_runs_directory(base_dir))
        self._event_log_storage = KeptOpenSqliteEventLogStorage(_event_logs_directory(base_dir))
        self._schedule_storage = SqliteScheduleStorage.from_local(_schedule_directory(base_dir))
        self._inst_data = inst_data
        # DagsterSqliteStorage's own __init__ would open a second, plain event log
        super(DagsterSqliteStorage, self).__init__()

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: ConfigurableClassData | None, config_value: dict[str, Any]
    ) -> KeptOpenSqliteStorage:
        os.makedirs(config_value["base_dir"], exist_ok=True)
        return cls(config_value["base_dir"], inst_data=inst_data)
