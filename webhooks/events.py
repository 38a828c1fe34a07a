"""Event bodies as sent: the stored ``data.changed`` body, or a ``webhook.test`` body.

``data.changed`` bodies are written by the pipeline's publish step with its change records; this
module makes test events and turns any stored body into the exact bytes that are signed.
"""

from __future__ import annotations

import datetime as dt
import secrets

import orjson
import sqlalchemy as sa

from findata.clock import utc_seconds_text
from findata.control_plane import schema

DATA_CHANGED = "data.changed"
TEST = "webhook.test"


def new_event_id() -> str:
    """``evt_`` followed by 24 hexadecimal characters."""
    return "evt_" + secrets.token_hex(12)


def record_test_event(connection: sa.Connection, now: dt.datetime) -> str:
    """Store a ``webhook.test`` event (only id, type, created); returns its id."""
    event_id = new_event_id()
    connection.execute(
        sa.insert(schema.events).values(
            event_id=event_id,
            type=TEST,
            version_id=None,
            payload={"id": event_id, "type": TEST, "created": utc_seconds_text(now)},
            created_at=now,
        )
    )
    return event_id


def event_body(payload: dict[str, object]) -> str:
    """The JSON text that is signed and sent (the same on every attempt and resend)."""
    return orjson.dumps(payload).decode()


def newest_data_changed_id(connection: sa.Connection) -> int:
    """``events.id`` of the newest ``data.changed`` event (0 when there is none)."""
    newest = connection.scalar(
        sa.select(sa.func.max(schema.events.c.id)).where(schema.events.c.type == DATA_CHANGED)
    )
    return int(newest or 0)
