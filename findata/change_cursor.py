"""Change-feed cursors: a position in the feed (the id of the last record read), as text.

``since`` with a cursor returns the records after it. The text is short and stable; it carries
no secret because it only says where a reader is in a feed every paid key can read.
"""

from __future__ import annotations

import datetime as dt
import re

#: how long the change feed keeps records (spec: "The feed keeps 90 days of records")
FEED_RETENTION = dt.timedelta(days=90)

_PREFIX = "chg_"
_CURSOR = re.compile(r"chg_([0-9]{12})")


def encode_change_cursor(last_record_id: int) -> str:
    """The cursor after record ``last_record_id`` (0: before the first record)."""
    if last_record_id < 0:
        raise ValueError("record ids are not negative")
    return f"{_PREFIX}{last_record_id:012d}"


def decode_change_cursor(cursor: str) -> int | None:
    """The record id a cursor stands after, or None if ``cursor`` is not one."""
    match = _CURSOR.fullmatch(cursor)
    return int(match.group(1)) if match else None
