"""The delivery schedule (spec: "Delivery and retries", "States and transitions")."""

from __future__ import annotations

import datetime as dt

#: waits before retries 2..10, counted from the start of the failed attempt
RETRY_WAITS = tuple(
    dt.timedelta(**w)
    for w in (
        {"minutes": 1},
        {"minutes": 5},
        {"minutes": 30},
        {"hours": 2},
        {"hours": 5},
        {"hours": 10},
        {"hours": 14},
        {"hours": 20},
        {"hours": 24},
    )
)
MAX_ATTEMPTS = len(RETRY_WAITS) + 1
#: an endpoint whose every attempt failed for this long is disabled
DISABLE_AFTER_FAILING = dt.timedelta(days=3)
#: a worker holds a claimed delivery this long; past it the attempt counts as interrupted
LEASE = dt.timedelta(seconds=60)
LOG_SIZE = 50
LOG_RETENTION = dt.timedelta(days=30)


def retry_at(attempt: int, attempt_started: dt.datetime) -> dt.datetime | None:
    """When attempt ``attempt + 1`` is due after attempt ``attempt`` failed; None after the last."""
    if attempt >= MAX_ATTEMPTS:
        return None
    return attempt_started + RETRY_WAITS[attempt - 1]
