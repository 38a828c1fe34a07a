"""What every request passes before routing: its id (``X-Request-Id``), the path routing
matches, the method rule, CORS headers, the last line of the error model (an exception nobody
handled becomes the spec's 500), and, once answered, its count and latency
(``api/prometheus.py``) and its log line.

Pure ASGI, so it sits outside FastAPI's routing and sees every response, errors included.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from urllib.parse import unquote

from starlette.responses import Response
from starlette.routing import Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from findata.api.errors import InternalError, MethodNotAllowed, error_response
from findata.api.headers import CORS_HEADERS, PREFLIGHT_HEADERS, REQUEST_ID_HEADER
from findata.api.prometheus import UNMATCHED_ROUTE, ApiMetrics
from findata.logs import current_request_id, log_fields

log = logging.getLogger("findata.api")
access_log = logging.getLogger("findata.api.access")

API_PREFIX = "/v1/"
ALLOWED_METHODS = ("GET", "OPTIONS")

#: an id a client or proxy sends that is kept: what log systems and tracing headers use, and
#: nothing that could break a log line (a longer or other value is replaced by a new id)
ACCEPTED_REQUEST_ID = re.compile(rb"[A-Za-z0-9_.:+/=-]{1,128}")
REQUEST_ID_NAME = REQUEST_ID_HEADER.lower().encode()  # as ASGI names headers


class FrontDoor:
    """ASGI middleware: the request's id on every response and log line of the request, an
    encoded ``/`` kept inside its path segment, 405 for methods other than GET and OPTIONS on
    ``/v1/``, OPTIONS answered here, CORS headers on every response, unhandled exceptions as 500
    ``internal_error``."""

    def __init__(
        self, app: ASGIApp, metrics: ApiMetrics | None = None, request_log: bool = True
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.request_log = request_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status: list[int] = []
        request_id = request_id_of(scope)
        answered_as = current_request_id.set(request_id)  # every log line of this request
        edge_headers = (*CORS_HEADERS, (REQUEST_ID_NAME, request_id.encode()))
        raw_path = scope.get("raw_path")
        if raw_path and b"%" in raw_path:
            scope["path"] = routable_path(raw_path)

        async def send_with_edge_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
                message["headers"] = [*message.get("headers", []), *edge_headers]
            await send(message)

        method = scope["method"]
        path: str = scope["path"]
        try:
            if path.startswith(API_PREFIX) and method not in ALLOWED_METHODS:
                response = error_response(MethodNotAllowed(), with_body=method != "HEAD")
                await response(scope, receive, send_with_edge_headers)
            elif path.startswith(API_PREFIX) and method == "OPTIONS":
                await Response(status_code=204, headers=PREFLIGHT_HEADERS)(
                    scope, receive, send_with_edge_headers
                )
            else:
                await self.app(scope, receive, send_with_edge_headers)
        except Exception:
            # the traceback goes to the log; the client learns nothing of the inside
            log.exception("unhandled error on %s %s", method, path)
            if status:
                raise  # the response had started: nothing sound can be sent any more
            await error_response(InternalError())(scope, receive, send_with_edge_headers)
        finally:
            self._answered(scope, status[0] if status else 0, time.perf_counter() - started)
            current_request_id.reset(answered_as)

    def _answered(self, scope: Scope, status: int, seconds: float) -> None:
        """Count the request and log its line: the route template, never the path or the
        query string (which may hold a key), and the account id when a key was read."""
        if self.metrics is None and not self.request_log:
            return
        route = route_template(scope)
        method = scope["method"]
        if self.metrics is not None:
            self.metrics.request_answered(route, method, status, seconds)
        if self.request_log:
            account_id = scope.get("state", {}).get("account_id")
            access_log.info(
                "%s %s %s %.1fms",
                method,
                route,
                status or "-",
                seconds * 1000,
                extra=log_fields(
                    ("method", "route", "status", "duration_ms"),
                    method=method,
                    route=route,
                    status=status or None,
                    duration_ms=round(seconds * 1000, 3),
                    account_id=account_id,
                ),
            )


def request_id_of(scope: Scope) -> str:
    """The id of this request: the ``X-Request-Id`` it carries when that is an accepted id
    (``ACCEPTED_REQUEST_ID``), else a new one."""
    for name, value in scope["headers"]:
        if name == REQUEST_ID_NAME:
            if ACCEPTED_REQUEST_ID.fullmatch(value):
                return value.decode("ascii")
            break
    return uuid.uuid4().hex


def routable_path(raw_path: bytes) -> str:
    """The path routing matches, from the path as sent: each segment decoded, with a ``/`` (and
    a ``%``) decoded inside a segment escaped again, so that ``%2F`` in a ticker stays in its
    segment instead of splitting the path (the server's decoded ``path`` has lost that
    difference). ``path_value`` decodes a matched segment."""
    segments = raw_path.decode("latin-1").split("/")
    return "/".join(unquote(part).replace("%", "%25").replace("/", "%2F") for part in segments)


def path_value(matched: str) -> str:
    """A path parameter as sent (a segment ``routable_path`` kept escaped, decoded)."""
    return unquote(matched) if "%" in matched else matched


def route_template(scope: Scope) -> str:
    """The template of the route that answered (``/v1/prices/{tickers}``), or of the route a
    request answered before routing would have reached (405, OPTIONS); ``unmatched`` when none
    matches."""
    route = scope.get("route")
    if route is None:
        app = scope.get("app")
        for candidate in getattr(getattr(app, "router", None), "routes", ()):
            match, _ = candidate.matches(scope)
            if match is not Match.NONE:
                route = candidate
                break
    path = getattr(route, "path", None)
    if not isinstance(path, str):
        return UNMATCHED_ROUTE
    return f"{path}/{{path}}" if isinstance(route, Mount) else path
