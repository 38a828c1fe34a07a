"""What every request passes before routing: the method rule, CORS headers, the last line of
the error model (an exception nobody handled becomes the spec's 500), and, once answered, its
count and latency (``api/prometheus.py``) and its log line.

Pure ASGI, so it sits outside FastAPI's routing and sees every response, errors included.
"""

from __future__ import annotations

import logging
import time

from starlette.responses import Response
from starlette.routing import Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from findata.api.errors import InternalError, MethodNotAllowed, error_response
from findata.api.headers import CORS_HEADERS, PREFLIGHT_HEADERS
from findata.api.prometheus import UNMATCHED_ROUTE, ApiMetrics
from findata.logs import log_fields

log = logging.getLogger("findata.api")
access_log = logging.getLogger("findata.api.access")

API_PREFIX = "/v1/"
ALLOWED_METHODS = ("GET", "OPTIONS")


class FrontDoor:
    """ASGI middleware: 405 for methods other than GET and OPTIONS on ``/v1/``, OPTIONS answered
    here, CORS headers on every response, unhandled exceptions as 500 ``internal_error``."""

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

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
                message["headers"] = [*message.get("headers", []), *CORS_HEADERS]
            await send(message)

        method = scope["method"]
        path: str = scope["path"]
        try:
            if path.startswith(API_PREFIX) and method not in ALLOWED_METHODS:
                response = error_response(MethodNotAllowed(), with_body=method != "HEAD")
                await response(scope, receive, send_with_cors)
            elif path.startswith(API_PREFIX) and method == "OPTIONS":
                await Response(status_code=204, headers=PREFLIGHT_HEADERS)(
                    scope, receive, send_with_cors
                )
            else:
                await self.app(scope, receive, send_with_cors)
        except Exception:
            # the traceback goes to the log; the client learns nothing of the inside
            log.exception("unhandled error on %s %s", method, path)
            if status:
                raise  # the response had started: nothing sound can be sent any more
            await error_response(InternalError())(scope, receive, send_with_cors)
        finally:
            self._answered(scope, status[0] if status else 0, time.perf_counter() - started)

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
