"""A fault-injecting HTTP proxy for the client tests: a real HTTP server on loopback that passes
each GET on to the findata server, unless the test scripted a fault for it.

``proxy.script(*actions)`` queues what the next requests get, one action per request (then
they pass through again): a ``Reply`` (a status and body of the test's choosing), ``DROP``
(the connection is closed without an answer), ``HANG`` (no answer until the client gives up
and the proxy is released) or ``PASS``. Every request that reached the proxy is recorded, so a
test counts attempts.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

PASS = "pass"
DROP = "drop"
HANG = "hang"

#: hop-by-hop and encoding headers the proxy does not relay (it answers with the decoded body)
_NOT_RELAYED = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "host"}
)


@dataclass(frozen=True)
class Reply:
    """An answer the proxy makes up instead of asking the server."""

    status: int
    body: bytes = b""
    content_type: str = "application/json"

    @classmethod
    def json(cls, status: int, body: dict[str, Any]) -> Reply:
        """A JSON body (an error body of the spec, say)."""
        return cls(status, json.dumps(body).encode())

    @classmethod
    def html(cls, status: int) -> Reply:
        """The kind of page a gateway answers with: not the API's error body."""
        page = f"<html><body><h1>{status} Bad Gateway</h1>nginx</body></html>"
        return cls(status, page.encode(), "text/html")


Action = Reply | str


@dataclass(frozen=True)
class Seen:
    """A request that reached the proxy: its path with query, its headers (lower-cased)."""

    path: str
    headers: dict[str, str]


@dataclass
class FaultProxy:
    """The proxy's script and record; ``url`` is where clients send their requests."""

    upstream: str
    url: str = ""
    requests: list[Seen] = field(default_factory=list)
    _actions: queue.SimpleQueue[Action] = field(default_factory=queue.SimpleQueue)
    _released: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, *actions: Action) -> None:
        """Queue the actions of the next requests, after clearing the record."""
        while not self._actions.empty():
            self._actions.get_nowait()
        with self._lock:
            self.requests.clear()
        for action in actions:
            self._actions.put(action)

    @property
    def attempts(self) -> int:
        """How many requests reached the proxy since the last ``script``."""
        with self._lock:
            return len(self.requests)

    def _next(self, seen: Seen) -> Action:
        with self._lock:
            self.requests.append(seen)
        try:
            return self._actions.get_nowait()
        except queue.Empty:
            return PASS


def _handler(proxy: FaultProxy, upstream: httpx.Client) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            headers = {name.lower(): value for name, value in self.headers.items()}
            action = proxy._next(Seen(self.path, headers))
            if action == DROP:
                self.close_connection = True  # nothing written: the client reads no answer
                return
            if action == HANG:
                proxy._released.wait(timeout=60)
                self.close_connection = True
                return
            if isinstance(action, Reply):
                self._answer(action.status, {"Content-Type": action.content_type}, action.body)
                return
            relayed = {k: v for k, v in headers.items() if k not in _NOT_RELAYED}
            relayed.pop("accept-encoding", None)  # keep the body plain for the relay
            answer = upstream.get(self.path, headers=relayed)
            kept = {k: v for k, v in answer.headers.items() if k.lower() not in _NOT_RELAYED}
            self._answer(answer.status_code, kept, answer.content)

        def _answer(self, status: int, headers: dict[str, str], body: bytes) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the tests read ``proxy.requests``."""

    return Handler


@contextmanager
def fault_proxy(upstream: str) -> Iterator[FaultProxy]:
    """A proxy in front of ``upstream`` on a free loopback port until the block ends."""
    proxy = FaultProxy(upstream)
    with httpx.Client(base_url=upstream, timeout=60) as client:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(proxy, client))
        server.daemon_threads = True
        proxy.url = f"http://127.0.0.1:{server.server_address[1]}"
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield proxy
        finally:
            proxy._released.set()  # let hanging requests go
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)
