"""Usage counters per subject (an account id) and UTC window: requests and rows.

One row per subject, window kind and window start; adding is one atomic upsert, so counts stay
exact with many workers on SQLite or PostgreSQL.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from accounts.tables import usage_counters

Window = Literal["day", "hour"]


def window_start(now: dt.datetime, window: Window) -> dt.datetime:
    """The start of the UTC day or clock hour holding ``now``."""
    now = now.astimezone(dt.UTC)
    if window == "day":
        return now.replace(hour=0, minute=0, second=0, microsecond=0)
    return now.replace(minute=0, second=0, microsecond=0)


def next_window_start(now: dt.datetime, window: Window) -> dt.datetime:
    """When the window holding ``now`` ends (00:00 UTC next day, or the next clock hour)."""
    step = dt.timedelta(days=1) if window == "day" else dt.timedelta(hours=1)
    return window_start(now, window) + step


def add_usage(
    connection: sa.Connection,
    subject: str,
    now: dt.datetime,
    *,
    requests: int,
    rows: int = 0,
) -> None:
    """Add to the subject's day and hour counters holding ``now`` (inside the caller's
    transaction)."""
    insert = (postgresql if connection.dialect.name == "postgresql" else sqlite).insert
    for window in ("day", "hour"):
        statement = insert(usage_counters).values(
            subject=subject,
            window=window,
            window_start=window_start(now, window),
            requests=requests,
            rows=rows,
        )
        connection.execute(
            statement.on_conflict_do_update(
                index_elements=["subject", "window", "window_start"],
                set_={
                    "requests": usage_counters.c.requests + statement.excluded.requests,
                    "rows": usage_counters.c.rows + statement.excluded.rows,
                },
            )
        )


def usage_in_window(
    connection: sa.Connection, subject: str, now: dt.datetime, window: Window
) -> tuple[int, int]:
    """Requests and rows counted for ``subject`` in the window holding ``now``."""
    row = connection.execute(
        sa.select(usage_counters.c.requests, usage_counters.c.rows).where(
            usage_counters.c.subject == subject,
            usage_counters.c.window == window,
            usage_counters.c.window_start == window_start(now, window),
        )
    ).first()
    return (0, 0) if row is None else (row.requests, row.rows)
