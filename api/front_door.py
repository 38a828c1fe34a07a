"""What every request passes before routing: the method rule, CORS headers, and the last
line of the error model (an exception nobody handled becomes the spec's 500).

Pure ASGI, so it sits outside FastAPI's routing and sees every response, errors included.
"""

from __future__ import annotations

import logging
import time

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from findata.api.errors import InternalError, MethodNotAllowed, error_response
from findata.api.headers import CORS_HEADERS, PREFLIGHT_HEADERS

log = logging.getLogger("findata.api")
access_log = logging.getLogger("findata.api.access")

API_PREFIX = "/v1/"
ALLOWED_METHODS = ("GET", "OPTIONS")


class FrontDoor:
    """ASGI middleware: 405 for methods other than GET and OPTIONS on ``/v1/``, OPTIONS answered
    here, CORS headers on every response, unhandled exceptions as 500 ``internal_error``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

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
            # the path only: a query string may hold a key (api_key), which is never logged
            access_log.info(
                "%s %s %s %.1fms",
                method,
                path,
                status[0] if status else "-",
                (time.perf_counter() - started) * 1000,
            )
