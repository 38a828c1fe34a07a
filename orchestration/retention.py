"""Old published versions removed: disk holds the current version and those a reader may still
be paging through.

A page cursor is pinned to the version its first page was read from (``api/paging.py``), so a
version replaced by a newer one is still read while clients finish their walks. It is kept for
``FINDATA_VERSION_RETENTION_HOURS`` after the version that replaced it was published, then its
file goes; a cursor on it answers the spec's 400 (``Invalid cursor: the data version it pages
through is no longer served``). The ``versions`` rows stay: the change feed's records name them.
An API worker that still holds a removed file open reads it until it closes it (unlinked files
stay readable while open).
"""

from __future__ import annotations

import datetime as dt
import itertools
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from findata.clock import as_utc
from findata.control_plane import schema
from findata.control_plane.database import engine_for
from findata.orchestration.publish import remove_database
from findata.settings import Settings


@dataclass(frozen=True)
class Retention:
    """What a pass removed and what the published versions hold on disk after it."""

    removed: list[str]  # labels of the versions whose files were removed
    kept: int  # version files on disk
    disk_bytes: int  # their size, with their side files


def remove_superseded_versions(settings: Settings, now: dt.datetime) -> Retention:
    """Remove the files of versions replaced longer ago than the retention (never the current
    version's)."""
    keep_for = dt.timedelta(hours=settings.version_retention_hours)
    versions = schema.versions
    with engine_for(settings.control_plane_url).connect() as connection:
        rows = connection.execute(
            sa.select(versions.c.label, versions.c.file_name, versions.c.published_at).order_by(
                versions.c.id
            )
        ).all()
    published = settings.published_dir
    removed: list[str] = []
    for row, replacement in itertools.pairwise(rows):
        path = published / row.file_name
        if path.exists() and as_utc(replacement.published_at) <= now - keep_for:
            remove_database(path)
            removed.append(row.label)
    files = [published / row.file_name for row in rows if (published / row.file_name).exists()]
    return Retention(removed, len(files), sum(_disk_bytes(path) for path in files))


def _disk_bytes(path: Path) -> int:
    wal = Path(f"{path}.wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
