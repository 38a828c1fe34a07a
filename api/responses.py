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


def kept_bytes(data: bytes) -> bytes:
    """``data`` in a bytes object of its own size, for bytes kept long (the row store's rows,
    the response cache's answers). orjson writes into a buffer larger than its output and
    returns it as is: a 400-byte row from ``orjson.dumps`` holds 4-8 KB for as long as it is
    kept (orjson 3.11-3.13; a worker whose row store was budgeted 256 MB grew by 3 GB)."""
    return memoryview(data).tobytes()


def json_text(body: Any) -> bytes:
    """``json_bytes(body)`` sized to its text (``kept_bytes``): JSON to keep."""
    return kept_bytes(json_bytes(body))


def json_response(
    body: Any, *, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    """A JSON response of ``body``."""
    return Response(
        content=json_bytes(body), status_code=status, media_type="application/json", headers=headers
    )
