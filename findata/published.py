"""The published-version store: which version is current and where its file is.

The pipeline writes versions (``findata.orchestration.publish``); the API reads them. The
current version is the newest row of ``versions``; its file under ``published/`` never
changes once written.
"""

from __future__ import annotations

import sqlalchemy as sa

from findata.control_plane import schema
from findata.control_plane.database import engine_for


def current_version(connection: sa.Connection) -> sa.Row | None:
    """The current version's row (the newest), or None before the first publish."""
    versions = schema.versions
    return connection.execute(sa.select(versions).order_by(versions.c.id.desc()).limit(1)).first()


def current_version_at(url: str) -> sa.Row | None:
    """The current version's row on the control plane at ``url`` (on a connection of its own)."""
    with engine_for(url).connect() as connection:
        return current_version(connection)
