"""JSON responses serialised with orjson (dates as YYYY-MM-DD, times as ISO 8601 UTC with Z)."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response


def _default(value: object) -> object:
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def json_bytes(body: Any) -> bytes:
    """``body`` as JSON bytes; datetimes in UTC end in ``Z`` (naive ones from SQLite are UTC)."""
    return orjson.dumps(body, default=_default, option=orjson.OPT_UTC_Z | orjson.OPT_NAIVE_UTC)


def json_response(
    body: Any, *, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    """A JSON response of ``body``."""
    return Response(
        content=json_bytes(body), status_code=status, media_type="application/json", headers=headers
    )
