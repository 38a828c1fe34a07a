"""Old published versions removed: disk holds the current version and those a reader may still
be paging through.

A page cursor is pinned to the version its first page was read from (``api/paging.py``), so a
version replaced by a newer one is still read while clients finish their walks. It is kept for
``FINDATA_VERSION_RETENTION_HOURS`` after the version that replaced it was published, then its
file goes; a cursor on it answers the spec's 400 (``Invalid cursor: the data version it pages
through is no longer served``). The ``versions`` rows stay: the change feed's records name them.
An API worker that still holds a removed file open reads it until it closes it (unlinked files
stay readable while open).

Versions share parts (``versions.py``): a part file goes when no version file left on
disk reads it (nor is it being written: the pass runs under the publish lock), with the parts a
crashed publish left behind.

With ``FINDATA_PUBLISHED_URL`` set, the bucket is pruned by the same rule
(``findata/published/bucket.py``): the version objects replaced long enough ago go, with those no
row names (a publish that crashed before its commit), then the part objects no version object
left reads. The API hosts' copies are pruned by the hosts (``api/published.py``).
"""

from __future__ import annotations

import datetime as dt
import itertools
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa

from findata.clock import as_utc
from findata.control_plane import schema
from findata.control_plane.database import engine_for
from findata.published.bucket import (
    PublishedBucket,
    bucket_for,
    version_parts_in_bucket,
)
from findata.published.lock import publish_lock
from findata.published.parts import remove_database
from findata.published.versions import PARTS_DIR, read_part_files, remove_unread_parts
from findata.settings import Settings


@dataclass(frozen=True)
class Retention:
    """What a pass removed and what the published versions hold on disk after it."""

    removed: list[str]  # labels of the versions whose files were removed
    kept: int  # version files on disk
    parts: int  # part files on disk, each read by one or more of those versions
    disk_bytes: int  # the size of both, with their side files
    objects_removed: list[str] = field(default_factory=list)  # from the bucket, if one is set


def remove_superseded_versions(settings: Settings, now: dt.datetime) -> Retention:
    """Remove the files of versions replaced longer ago than the retention (never the current
    version's)."""
    keep_for = dt.timedelta(hours=settings.version_retention_hours)
    versions = schema.versions
    published = settings.published_dir
    removed: list[str] = []
    # the versions are read under the lock: a version published after the read would be
    # missing from it, and its new parts removed as read by no version
    with publish_lock(settings):
        with engine_for(settings.control_plane_url).connect() as connection:
            rows = connection.execute(
                sa.select(versions.c.label, versions.c.file_name, versions.c.published_at).order_by(
                    versions.c.id
                )
            ).all()
        for row, replacement in itertools.pairwise(rows):
            path = published / row.file_name
            if path.exists() and as_utc(replacement.published_at) <= now - keep_for:
                remove_database(path)
                removed.append(row.label)
        files = [published / r.file_name for r in rows if (published / r.file_name).exists()]
        parts = remove_unread_parts(published, files)
        bucket = bucket_for(settings)
        objects = [] if bucket is None else _prune_bucket(bucket, published, rows, now - keep_for)
    return Retention(
        removed,
        len(files),
        len(parts),
        sum(_disk_bytes(path) for path in [*files, *parts]),
        objects,
    )


def _prune_bucket(
    bucket: PublishedBucket, published: Path, rows: list[sa.Row], replaced_before: dt.datetime
) -> list[str]:
    """Delete the version objects replaced before ``replaced_before`` or named by no row, then
    the part objects no version object left reads; the names deleted."""
    held = bucket.names()
    superseded = {
        row.file_name
        for row, replacement in itertools.pairwise(rows)
        if as_utc(replacement.published_at) <= replaced_before
    }
    versions = {n for n in held if "/" not in n and n.endswith(".duckdb")}
    kept = sorted((versions & {r.file_name for r in rows}) - superseded)
    read: set[str] = set()
    with tempfile.TemporaryDirectory() as scratch:
        for name in kept:
            local = published / name  # the working copy's file is the object's
            read.update(
                read_part_files(local)
                if local.exists()
                else version_parts_in_bucket(bucket, name, Path(scratch))
            )
    gone_versions = versions - set(kept)
    gone_parts = {n for n in held if n.startswith(f"{PARTS_DIR}/")} - read
    bucket.delete(gone_versions)  # first: a version object left always has its parts
    bucket.delete(gone_parts)
    return sorted(gone_versions | gone_parts)


def _disk_bytes(path: Path) -> int:
    wal = Path(f"{path}.wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
