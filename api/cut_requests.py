"""The answer of a request that the server's stop cut short: 503 ``service_unavailable``.

On SIGTERM uvicorn lets the requests in flight finish for its graceful-shutdown time (``api/
serve.py``: a little less than ``FINDATA_SHUTDOWN_GRACE_SECONDS``), then cancels the task of
each one still running. Nothing else cancels a request's task, so a cancellation reaching this
layer is that cut. Left alone it reached uvicorn, which answered 500 (as for a crash) and
logged a traceback, and the command then exited 0 as if the stop had been clean. Here the
request is answered 503 (a client retries it, elsewhere or after the restart), inside the
front door so that its count and access line carry the 503, and the process remembers the cut:
``findata serve`` then exits with the forced-stop status (``findata/shutdown.py``).
"""

from __future__ import annotations

import asyncio
import threading

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from findata.api.errors import ApiError, error_response

#: set once this process answered a request cut by the stop
_cut = threading.Event()


def requests_were_cut() -> bool:
    """True when the stop cut a request of this process short."""
    return _cut.is_set()


class AnswerCutRequests:
    """ASGI middleware (inside ``FrontDoor``): a request whose task is cancelled before its
    response started is answered 503 ``service_unavailable``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watched_send)
        except asyncio.CancelledError:
            _cut.set()
            if started:
                raise  # part of the answer went out: the connection closes without the rest
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()  # handled: the request ends with its answer
            await error_response(ApiError("service_unavailable"))(scope, receive, send)
