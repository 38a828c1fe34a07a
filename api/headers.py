"""Headers every response carries so browsers may call the API and read its limits and id."""

from __future__ import annotations

#: every response's id, also in each log line of its request (``api/front_door.py``)
REQUEST_ID_HEADER = "X-Request-Id"

#: the spec's "Response headers" (and the client version notices, and the request id) a
#: browser script may read
EXPOSED_HEADERS = (
    "X-RateLimit-Limit-Day",
    "X-RateLimit-Remaining-Day",
    "X-RateLimit-Limit-Hour",
    "X-RateLimit-Remaining-Hour",
    "X-Data-Floor",
    "X-Rows-Today",
    "X-Entities-Today",
    "Age",
    "X-Service-Client-Latest",
    "X-Service-Client-Update",
    "X-Service-Client-Update-Message",
    "Warning",
    REQUEST_ID_HEADER,
)

CORS_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"access-control-allow-origin", b"*"),
    (b"access-control-expose-headers", ", ".join(EXPOSED_HEADERS).encode()),
)

#: the answer to OPTIONS (a CORS preflight or a plain question about methods)
PREFLIGHT_HEADERS = {
    "Allow": "GET, OPTIONS",
    "Access-Control-Allow-Methods": "GET, OPTIONS",
    "Access-Control-Allow-Headers": f"X-API-Key, Authorization, User-Agent, {REQUEST_ID_HEADER}",
    "Access-Control-Max-Age": "86400",
}
