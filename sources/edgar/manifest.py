"""What was fetched from the SEC: each URL's file, size, hash and validators, and each day's
form index. A killed fetch resumes from it; a second fetch asks only for what it lacks.

An SQLite file under ``$FINDATA_HOME/fetch`` (not in landing: landing holds the publishers'
files alone). A file is recorded after it has landed whole, so a fetch killed between the two
fetches that file again, and lands the same bytes.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS files (
        url TEXT PRIMARY KEY,
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        etag TEXT,
        last_modified TEXT,
        fetched_at TEXT NOT NULL
    )""",
    # a URL the SEC answered 404 (a filing taken out of an index, a company without XBRL facts)
    """CREATE TABLE IF NOT EXISTS missing (url TEXT PRIMARY KEY, seen_at TEXT NOT NULL)""",
    # each day's form index: 'fetched', or 'none' (no index that day: a weekend, a holiday)
    """CREATE TABLE IF NOT EXISTS index_days (
        day TEXT PRIMARY KEY, status TEXT NOT NULL, entries INTEGER NOT NULL
    )""",
)


@dataclass(frozen=True)
class FetchedFile:
    """A file landed from ``url``: where (relative to home), its size and hash, and the
    validators the SEC sent with it (for conditional requests)."""

    url: str
    path: str
    size: int
    sha256: str
    etag: str | None
    last_modified: str | None


class FetchManifest:
    """The manifest of one home; safe to use from the fetch's threads."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._connection = sqlite3.connect(
            path, timeout=30, isolation_level=None, check_same_thread=False
        )
        self._lock = threading.Lock()
        with self._lock:
            self._connection.execute("PRAGMA journal_mode = WAL")
            for statement in _SCHEMA:
                self._connection.execute(statement)

    def close(self) -> None:
        """Close the database."""
        self._connection.close()

    def file(self, url: str) -> FetchedFile | None:
        """What was landed from ``url``, if anything."""
        with self._lock:
            row = self._connection.execute(
                "SELECT url, path, size, sha256, etag, last_modified FROM files WHERE url = ?",
                (url,),
            ).fetchone()
        return FetchedFile(*row) if row else None

    def record_file(self, fetched: FetchedFile, now: dt.datetime) -> None:
        """Record a file that has landed whole."""
        with self._lock:
            self._connection.execute(
                "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    fetched.url,
                    fetched.path,
                    fetched.size,
                    fetched.sha256,
                    fetched.etag,
                    fetched.last_modified,
                    now.isoformat(),
                ),
            )
            self._connection.execute("DELETE FROM missing WHERE url = ?", (fetched.url,))

    def is_missing(self, url: str) -> bool:
        """Whether the SEC answered 404 for ``url`` before."""
        with self._lock:
            return (
                self._connection.execute("SELECT 1 FROM missing WHERE url = ?", (url,)).fetchone()
                is not None
            )

    def record_missing(self, url: str, now: dt.datetime) -> None:
        """Record a 404."""
        with self._lock:
            self._connection.execute(
                "INSERT OR REPLACE INTO missing VALUES (?, ?)", (url, now.isoformat())
            )

    def index_day(self, day: dt.date) -> str | None:
        """``fetched`` or ``none`` for a day whose form index is settled, else None."""
        with self._lock:
            row = self._connection.execute(
                "SELECT status FROM index_days WHERE day = ?", (day.isoformat(),)
            ).fetchone()
        return row[0] if row else None

    def record_index_day(self, day: dt.date, status: str, entries: int) -> None:
        """Settle ``day``: its index was read (``fetched``), or there is none (``none``)."""
        with self._lock:
            self._connection.execute(
                "INSERT OR REPLACE INTO index_days VALUES (?, ?, ?)",
                (day.isoformat(), status, entries),
            )

    def last_index_day(self) -> dt.date | None:
        """The latest day whose form index is settled."""
        with self._lock:
            row = self._connection.execute("SELECT max(day) FROM index_days").fetchone()
        return dt.date.fromisoformat(row[0]) if row and row[0] else None

    def fetched_ciks(self, folder: str) -> set[int]:
        """The CIKs whose ``CIK##########.json`` landed in ``folder`` (``sec/submissions``)."""
        prefix = f"landing/{folder}/CIK"
        with self._lock:
            rows = self._connection.execute(
                "SELECT path FROM files WHERE path LIKE ? || '%'", (prefix,)
            ).fetchall()
        ciks = set()
        for (path,) in rows:
            name = Path(path).stem
            if name.startswith("CIK") and name[3:].isdigit():
                ciks.add(int(name[3:]))
        return ciks
