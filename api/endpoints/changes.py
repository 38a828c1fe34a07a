"""``/v1/changes``: the change feed, read from the control plane's ``change_records``."""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa

from findata.api.calls import EndpointAnswer, EndpointCall
from findata.api.errors import ApiError, BadRequest
from findata.api.params import DATE_PATTERN
from findata.change_cursor import FEED_RETENTION, decode_change_cursor, encode_change_cursor
from findata.control_plane.schema import change_records, versions

DEFAULT_LIMIT, MAX_LIMIT = 1000, 5000
EXPIRED = (
    "since is older than the 90 days of records the feed keeps: re-pull your stored data, then "
    "continue from meta.latest_cursor."
)


def handle(call: EndpointCall) -> EndpointAnswer:
    """The records after ``since``, oldest first, a page at a time."""
    limit = min(call.params.get("limit") or DEFAULT_LIMIT, MAX_LIMIT)
    with call.control_plane.connect() as connection:
        oldest, latest = connection.execute(
            sa.select(sa.func.min(change_records.c.id), sa.func.max(change_records.c.id))
        ).one()
        after = _position(call, connection, oldest, latest or 0)
        rows = connection.execute(
            sa.select(change_records, versions.c.label)
            .join(versions, versions.c.id == change_records.c.version_id)
            .where(change_records.c.id > after)
            .order_by(change_records.c.id)
            .limit(limit + 1)
        ).all()
    page = rows[:limit]
    last = page[-1].id if page else max(after, 0)
    return EndpointAnswer(
        rows=[_record(row) for row in page],
        meta={
            "next_cursor": encode_change_cursor(last),
            "has_more": len(rows) > limit,
            "latest_cursor": encode_change_cursor(latest or 0),
        },
        cache_control="no-store",
    )


def _position(
    call: EndpointCall, connection: sa.Connection, oldest: int | None, latest: int
) -> int:
    """The id after which to read; 410 when records after ``since`` were pruned already; 400
    for a cursor past the newest record (never issued: a client holding it would wait for
    records it can never get)."""
    since = call.params.get("since")
    if since is None:
        return 0
    record = decode_change_cursor(since)
    if record is not None and record > latest:
        raise BadRequest(
            f"Invalid since: '{since}' is past the newest change record "
            f"({encode_change_cursor(latest)}); pass a meta.next_cursor or meta.change_cursor "
            "that findata gave you"
        )
    if record is not None:
        # a record between the cursor and the oldest one kept was pruned: the reader missed it
        if oldest is not None and record + 1 < oldest:
            raise ApiError("cursor_expired", EXPIRED)
        return record
    if DATE_PATTERN.fullmatch(since):
        try:
            day = dt.date.fromisoformat(since)
        except ValueError:
            day = None
        if day is not None:
            if day < call.today - FEED_RETENTION:
                raise ApiError("cursor_expired", EXPIRED)
            start = dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)
            before = connection.execute(
                sa.select(sa.func.max(change_records.c.id)).where(
                    change_records.c.created_at < start
                )
            ).scalar_one()
            return before or 0
    parameter = call.contract.parameter("since")
    assert parameter is not None and parameter.error is not None
    raise BadRequest(parameter.error.format(value=since))


def _record(row: Any) -> dict[str, Any]:
    """A feed record: its id (the cursor that stands on it), what changed and where to re-pull."""
    return {
        "id": encode_change_cursor(row.id),
        "dataset": row.dataset,
        "scope": row.scope,
        "index": row.entity.upper() if row.scope == "index" else None,
        "entity": row.entity,
        "change": row.change,
        "start": row.start,
        "end": row.end,
        "rows": row.rows,
        "url": row.url,
        "version": row.label,
        "created_at": row.created_at,
    }
