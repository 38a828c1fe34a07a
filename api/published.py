"""The published data the API serves: the current version (newest ``versions`` row) and read-only
DuckDB connections to version files, opened once per version and shared by requests.

A new version is picked up on the next request, without a restart; a request (or a cursor) that
began on an older version keeps reading that version's immutable file.
"""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import dataclass
from pathlib import Path

import duckdb
import sqlalchemy as sa

from findata.change_cursor import encode_change_cursor
from findata.control_plane import schema
from findata.published import current_version


@dataclass(frozen=True)
class Version:
    """A published version as the API needs it."""

    id: int
    label: str
    path: Path
    published_at: dt.datetime
    data_through: dict[str, str | None]


class PublishedData:
    """Versions of the control plane at ``engine``, files under ``published_dir``."""

    def __init__(self, engine: sa.Engine, published_dir: Path) -> None:
        self.engine = engine
        self.published_dir = published_dir
        self._connections: dict[str, duckdb.DuckDBPyConnection] = {}
        self._lock = threading.Lock()

    def current(self) -> Version | None:
        """The current version, or None before the first publish."""
        with self.engine.connect() as connection:
            row = current_version(connection)
        return None if row is None else self._version(row)

    def by_label(self, label: str) -> Version | None:
        """The version called ``label`` if it is still on record."""
        versions = schema.versions
        with self.engine.connect() as connection:
            row = connection.execute(sa.select(versions).where(versions.c.label == label)).first()
        if row is None or not (self.published_dir / row.file_name).exists():
            return None
        return self._version(row)

    def change_cursor(self, version: Version) -> str:
        """Where a client of ``version``'s data starts the change feed: after the last record
        of that version or an earlier one."""
        records = schema.change_records
        with self.engine.connect() as connection:
            last = connection.execute(
                sa.select(sa.func.max(records.c.id)).where(records.c.version_id <= version.id)
            ).scalar_one()
        return encode_change_cursor(last or 0)

    def cursor(self, version: Version) -> duckdb.DuckDBPyConnection:
        """A cursor of its own on ``version`` (DuckDB cursors are per thread)."""
        with self._lock:
            connection = self._connections.get(version.label)
            if connection is None:
                connection = duckdb.connect(str(version.path), read_only=True)
                self._connections[version.label] = connection
        return connection.cursor()

    def _version(self, row: sa.Row) -> Version:
        return Version(
            id=row.id,
            label=row.label,
            path=self.published_dir / row.file_name,
            published_at=row.published_at,
            data_through=dict(row.data_through),
        )
