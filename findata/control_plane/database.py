"""Opening the control-plane database, and migrating it.

Migrations run when asked: ``findata db upgrade``, and at the start of ``findata serve`` and
``findata demo`` (``upgrade``). Opening a database (``engine_for``) never migrates it: a
database not at the newest migration is refused with ``ControlPlaneNotUpgraded``, whose message
says to run ``findata db upgrade`` (a process of an older or newer findata never changes the
schema under the others by opening it).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).parent / "migrations"
#: the newest migration (``migrations/versions``), which every process but ``upgrade`` checks
#: for: named here, so that opening the database needs no Alembic (importing it takes ~0.4 s,
#: of every command and of every API worker's start); a test holds it to Alembic's head
HEAD = "0007"
#: connections an engine keeps open (and as many more it may open for a burst)
POOL_SIZE = 20
#: what a refused database's message tells the operator to run
UPGRADE_COMMAND = "findata db upgrade"


class ControlPlaneNotUpgraded(RuntimeError):
    """The control-plane database is not at the newest migration of this findata (never
    migrated, behind, or migrated by a newer findata); the message says what to run."""


def alembic_config(url: str) -> Config:
    """Alembic's configuration for ``url`` (no alembic.ini: everything is set here)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str) -> None:
    """Apply every migration not yet applied to the database at ``url`` (a new SQLite file and
    its folder are made): ``findata db upgrade``, and the start of ``serve`` and ``demo``."""
    from alembic import command

    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    command.upgrade(alembic_config(url), "head")


def redacted(url: str) -> str:
    """A database URL without its password (as messages show it)."""
    return sa.make_url(url).render_as_string(hide_password=True)


def applied_migrations(connection: sa.Connection) -> set[str]:
    """The migrations Alembic recorded as applied (its ``alembic_version`` table: the newest
    one, on a history without branches); empty on a database never migrated."""
    if not sa.inspect(connection).has_table("alembic_version"):
        return set()
    return set(connection.execute(sa.text("SELECT version_num FROM alembic_version")).scalars())


def _refusal(url: str, applied: set[str]) -> ControlPlaneNotUpgraded | None:
    """Why the database at ``url``, with the migrations ``applied``, cannot be used (None: it
    can)."""
    if applied == {HEAD}:
        return None
    if not applied:
        return _never_upgraded(url)
    from alembic.script import ScriptDirectory  # only to say why: not on the way of every open

    known = {revision.revision for revision in ScriptDirectory(str(MIGRATIONS)).walk_revisions()}
    where = f"the control-plane database {redacted(url)}"
    current = ", ".join(sorted(applied))
    if applied <= known:
        return ControlPlaneNotUpgraded(
            f"{where} is at migration {current}, and this findata needs {HEAD}: run "
            f"`{UPGRADE_COMMAND}`"
        )
    return ControlPlaneNotUpgraded(
        f"{where} is at migration {current}, which this findata does not have (a newer findata "
        f"migrated it; the newest here is {HEAD}): run the newer findata"
    )


def _never_upgraded(url: str) -> ControlPlaneNotUpgraded:
    return ControlPlaneNotUpgraded(
        f"the control-plane database {redacted(url)} has no findata schema yet: run "
        f"`{UPGRADE_COMMAND}` first (`findata serve` and `findata demo` run it as they start)"
    )


def _sqlite_file_missing(url: str) -> bool:
    """Whether ``url`` names a SQLite file that does not exist (opening it would make an empty
    one, or fail on a missing folder)."""
    parsed = sa.make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return False
    return not Path(parsed.database).exists()


@cache
def engine_for(url: str) -> sa.Engine:
    """The engine of the control plane at ``url``, which must be at the newest migration
    (``ControlPlaneNotUpgraded`` otherwise; nothing is cached then, so the next call after an
    upgrade succeeds). Opening never migrates: ``upgrade`` does."""
    if _sqlite_file_missing(url):
        raise _never_upgraded(url)
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
    with engine.connect() as connection:
        refused = _refusal(url, applied_migrations(connection))
    if refused is not None:
        engine.dispose()
        raise refused
    return engine


def require_upgraded(url: str) -> None:
    """Refuse (``ControlPlaneNotUpgraded``) a control plane not at the newest migration: what a
    command checks before work that would otherwise fail deep inside (a refresh's run)."""
    engine_for(url)


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
