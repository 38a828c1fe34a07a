"""``GET /v1/auth/usage``: the account's requests today against its daily limit."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from findata.accounts.usage import next_window_start, usage_in_window
from findata.api.client_notices import notice_headers
from findata.api.deps import AppClock, ControlPlane, CurrentKey
from findata.api.responses import json_response

router = APIRouter()


@router.get("/v1/auth/usage", summary="Requests used today, the daily limit, and when it resets")
def usage(request: Request, owner: CurrentKey, engine: ControlPlane, clock: AppClock) -> Response:
    """Counts are per account (all its keys share them), per UTC day."""
    now = clock.now()
    with engine.connect() as connection:
        requests_today, rows_today = usage_in_window(connection, owner.account.id, now, "day")
    plan = owner.plan
    return json_response(
        {
            "requests_today": requests_today,
            "daily_limit": plan.requests_per_day,
            "resets_at": next_window_start(now, "day"),
            "rows_today": rows_today,
            "plan": plan.code,
        },
        headers={
            "Cache-Control": "no-store",
            **notice_headers(
                request.headers.get("user-agent"),
                request.app.state.settings.client_latest_version,
            ),
        },
    )
