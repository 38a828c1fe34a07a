"""``GET /v1/status``: data freshness, before the first publish too."""

from __future__ import annotations

from typing import Any

from findata.api.calls import ServiceAnswer, ServiceCall
from findata.published import current_version


def handle(call: ServiceCall) -> ServiceAnswer:
    """The current published version, when it was published, and per dataset the last date
    with data and the row count; ``no_data`` while nothing is published."""
    with call.control_plane.connect() as connection:
        version = current_version(connection)
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
