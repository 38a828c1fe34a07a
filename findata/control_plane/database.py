"""Opening the control-plane database, migrated to the newest schema on first use."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from sqlalchemy.dialects import postgresql, sqlite

MIGRATIONS = Path(__file__).parent / "migrations"
#: connections an engine keeps open (and as many more it may open for a burst)
POOL_SIZE = 20


def alembic_config(url: str) -> Config:
    """Alembic's configuration for ``url`` (no alembic.ini: everything is set here)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str) -> None:
    """Apply every migration not yet applied to the database at ``url``."""
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    command.upgrade(alembic_config(url), "head")


@cache
def engine_for(url: str) -> sa.Engine:
    """The engine of the control plane at ``url``, migrated to the newest schema."""
    upgrade(url)
    # PostgreSQL restarts (upgrades, failovers) while the service runs: every pooled connection
    # is then dead, and the next request on each would fail. The pre-ping (one round trip per
    # checkout) replaces a dead connection before it is used. SQLite is a file: nothing to ping.
    postgresql = sa.make_url(url).get_backend_name() == "postgresql"
    # The pool holds as many connections as requests a worker runs at once (its thread pool
    # serves 16 connections' requests here): past ``pool_size`` a returned connection is
    # closed, and the next request pays a new one (a TCP connect and sign-in on PostgreSQL).
    engine = sa.create_engine(
        url, future=True, pool_pre_ping=postgresql, pool_size=POOL_SIZE, max_overflow=POOL_SIZE
    )
    if engine.dialect.name == "sqlite":
        # several processes (pipeline, API workers) share the file: wait on locks, don't fail
        sa.event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def upsert_insert(bind: sa.Connection | sa.Engine) -> Callable[..., Any]:
    """The ``insert`` of ``bind``'s dialect, the one with ``on_conflict_do_*`` (the control
    plane is SQLite or PostgreSQL; both spell an upsert the same way)."""
    return (postgresql if bind.dialect.name == "postgresql" else sqlite).insert


def _sqlite_pragmas(connection: object, _record: object) -> None:
    """Per-connection SQLite settings (``connection`` is the DBAPI connection)."""
    cursor = connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()
