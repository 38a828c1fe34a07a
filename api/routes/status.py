"""``GET /v1/status``: data freshness. Never reads a key; no rate-limit headers."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from findata.api.client_notices import notice_headers
from findata.api.deps import ControlPlane
from findata.api.responses import json_response
from findata.published import current_version

router = APIRouter()


@router.get(
    "/v1/status", summary="Data freshness: the current version and data_through per dataset"
)
def status(request: Request, engine: ControlPlane) -> Response:
    """The current published version, when it was published, and per dataset the last date with
    data and the row count. The same body with or without a key."""
    with engine.connect() as connection:
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
    notices = notice_headers(
        request.headers.get("user-agent"), request.app.state.settings.client_latest_version
    )
    return json_response(body, headers={"Cache-Control": "no-cache", **notices})
