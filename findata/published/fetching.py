"""An API host's copy of the published versions in the bucket (``FINDATA_PUBLISHED_URL``).

When a worker notices a new current version that its host's published folder lacks, it fetches
it in a thread of its own (``start``) and keeps serving the version before until the copy is
whole; a worker with nothing to serve yet (just started) waits for it (``wait``). The download
itself is ``findata.published.bucket.fetch_version``: atomic, and one process of the host at a
time (the others find the version there). After a fetch the copy is pruned of the versions
retention removed from the bucket.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import sqlalchemy as sa

from findata.control_plane import schema
from findata.published.bucket import PublishedBucket, fetch_version, prune_copy

log = logging.getLogger("findata.api")


class VersionFetches:
    """Fetches from ``bucket`` into ``published`` (this host's published folder)."""

    def __init__(self, bucket: PublishedBucket, published: Path, engine: sa.Engine) -> None:
        self.bucket = bucket
        self.published = published
        self._engine = engine  # the control plane: which versions have rows
        self._running: set[str] = set()
        self._lock = threading.Lock()

    def start(self, file_name: str) -> None:
        """Fetch version ``file_name`` in the background unless this worker already is (a
        fetch that failed is tried again by the next call)."""
        with self._lock:
            if file_name in self._running:
                return
            self._running.add(file_name)
        threading.Thread(
            target=self._fetch, args=(file_name,), name=f"fetch {file_name}", daemon=True
        ).start()

    def wait(self, file_name: str) -> Path | None:
        """Fetch version ``file_name`` now (the caller has nothing else to serve); its path,
        or None when the bucket no longer holds it."""
        try:
            return fetch_version(self.bucket, self.published, file_name)
        except FileNotFoundError:
            return None

    def _fetch(self, file_name: str) -> None:
        try:
            fetch_version(self.bucket, self.published, file_name)
            with self._engine.connect() as connection:
                named = set(connection.execute(sa.select(schema.versions.c.file_name)).scalars())
            gone = prune_copy(self.bucket, self.published, named)
            if gone:
                log.info("removed versions retention removed from the bucket: %s", gone)
        except Exception:
            # the version before is served meanwhile; the next request starts another try
            log.exception("fetching %s from %s failed", file_name, self.bucket.url)
        finally:
            with self._lock:
                self._running.discard(file_name)
