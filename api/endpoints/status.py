"""``GET /v1/status``: data freshness, before the first publish too."""

from __future__ import annotations

from typing import Any

from findata.api.calls import ServiceAnswer, ServiceCall


def handle(call: ServiceCall) -> ServiceAnswer:
    """The current published version, when it was published, and per dataset the last date
    with data and the row count; ``no_data`` while nothing is published.

    The version is the one this worker serves: the newest, except on a host that is still
    fetching the newest from the bucket (``FINDATA_PUBLISHED_URL``), which serves, and names,
    the version before it meanwhile; a client that reads status and then data sees one
    version."""
    version = call.published.current()
    if version is None:
        body: dict[str, Any] = {
            "status": "no_data",
            "version": None,
            "published_at": None,
            "datasets": {},
        }
    else:
        body = {
            "status": "ok",
            "version": version.label,
            "published_at": version.published_at,
            "datasets": {
                name: {
                    "data_through": version.data_through.get(name),
                    "rows": version.row_counts.get(name),
                }
                for name in sorted(version.row_counts)
            },
        }
    # clients poll status to learn of a new version: a cache may keep it but must ask again
    return ServiceAnswer(body, "no-cache")
