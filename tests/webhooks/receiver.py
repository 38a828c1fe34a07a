"""Webhook test fixtures (a pytest plugin, loaded by tests/conftest.py): a test CA, a real HTTPS
receiver on loopback that records every request, and builders for the management service and
the delivery worker under the UNSAFE development setting (loopback allowed, the test CA trusted).
"""

from __future__ import annotations

import datetime as dt
import queue
import ssl
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import sqlalchemy as sa

from findata.accounts.store import Account, AccountStore
from findata.clock import ManualClock
from findata.control_plane.database import engine_for
from findata.settings import Settings
from findata.webhooks.dev_tls import LoopbackCertificates, make_loopback_certificates
from findata.webhooks.endpoints import WebhookEndpoints
from findata.webhooks.sender import post_signed
from findata.webhooks.signing import SecretBox
from findata.webhooks.url_safety import Resolver, UrlPolicy, system_resolver
from findata.webhooks.worker import DeliveryWorker, Sender
from tests.databases import upgraded


@dataclass(frozen=True)
class Received:
    """One request as the receiver got it: raw body bytes, headers lower-cased."""

    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """A real HTTPS server on 127.0.0.1 that records requests and answers as told per path.

    ``answer(path, *statuses)`` queues answers for the next requests to ``path`` (then 200);
    a status of ``"hold"`` makes that request wait until ``release(path)``.
    """

    port: int
    requests: list[Received] = field(default_factory=list)
    _answers: dict[str, queue.SimpleQueue[int | str]] = field(default_factory=dict)
    _holds: dict[str, threading.Event] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str | None = None) -> str:
        """An https URL on this receiver (a fresh path unless one is given)."""
        return f"https://localhost:{self.port}{path or '/' + uuid.uuid4().hex}"

    def answer(self, path: str, *statuses: int | str) -> None:
        """Answer the next requests to ``path`` with ``statuses`` in turn."""
        answers = self._answers.setdefault(path, queue.SimpleQueue())
        for status in statuses:
            answers.put(status)

    def release(self, path: str) -> None:
        """Let held requests to ``path`` be answered (200)."""
        self._holds.setdefault(path, threading.Event()).set()

    def received(self, path: str) -> list[Received]:
        """The requests to ``path`` so far, in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def wait_for(self, path: str, count: int, timeout: float = 30) -> list[Received]:
        """Block until ``count`` requests reached ``path`` (for a worker in another process)."""
        deadline = time.monotonic() + timeout
        while len(self.received(path)) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{path}: {len(self.received(path))} of {count} arrived")
            time.sleep(0.02)
        return self.received(path)

    def _next_status(self, path: str) -> int | str:
        answers = self._answers.get(path)
        if answers is None or answers.empty():
            return 200
        return answers.get()


class _DeepQueueServer(ThreadingHTTPServer):
    """A deep accept queue (TLS handshakes run in the request threads): with the defaults,
    concurrent senders overflow the backlog of 5 and wait for a SYN retry (1 s)."""

    request_queue_size = 128
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        """A sender that refuses the test CA (as tests of an untrusted receiver make it) or
        drops its connection is what the test asked for, not an error worth printing."""
        if not isinstance(sys.exc_info()[1], ssl.SSLError | ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


def start_receiver(certificates: LoopbackCertificates) -> tuple[Receiver, ThreadingHTTPServer]:
    """Serve a ``Receiver`` over TLS with the test certificate on a free loopback port."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length)
            path = self.path
            with receiver._lock:  # arrival order and queued answers stay in step
                receiver.requests.append(
                    Received(path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                status = receiver._next_status(path)
            if status == "hold":
                receiver._holds.setdefault(path, threading.Event()).wait(120)
                status = 200
            self.send_response(int(status))
            if 300 <= int(status) < 400:
                self.send_header("location", f"https://localhost:{receiver.port}/elsewhere")
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = _DeepQueueServer(("127.0.0.1", 0), Handler)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificates.cert, certificates.key)
    server.socket = context.wrap_socket(
        server.socket, server_side=True, do_handshake_on_connect=False
    )
    receiver = Receiver(server.server_address[1])
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return receiver, server


@pytest.fixture(scope="session")
def test_certificates(tmp_path_factory: pytest.TempPathFactory) -> LoopbackCertificates:
    return make_loopback_certificates(tmp_path_factory.mktemp("webhook-tls"))


@pytest.fixture(scope="session")
def receiver(test_certificates: LoopbackCertificates) -> Iterator[Receiver]:
    """One HTTPS receiver for the session; each test uses paths of its own (``receiver.url()``)."""
    found, server = start_receiver(test_certificates)
    yield found
    server.shutdown()


def webhook_settings(home: Path, certificates: LoopbackCertificates, **more: object) -> Settings:
    """Settings under the UNSAFE development setting: loopback receivers, the test CA."""
    return Settings(
        home=home,
        webhooks_allow_private=True,
        webhooks_ca_bundle=certificates.ca,
        **more,
    )


@dataclass
class WebhookRig:
    """A control plane with accounts, the management service and a worker on one clock."""

    settings: Settings
    engine: sa.Engine
    clock: ManualClock
    accounts: AccountStore
    endpoints: WebhookEndpoints

    def account(self, plan: str = "max") -> Account:
        """A fresh account on ``plan``."""
        return self.accounts.create_account(f"{uuid.uuid4().hex[:12]}@example.com", plan)

    def worker(
        self,
        resolver: Resolver = system_resolver,
        sender: Sender = post_signed,
        name: str | None = None,
        concurrency: int = 8,
    ) -> DeliveryWorker:
        """A delivery worker on this rig's clock (the UNSAFE loopback policy of its settings)."""
        return DeliveryWorker(
            self.engine,
            self.clock,
            self.accounts,
            SecretBox.from_settings(self.settings),
            UrlPolicy.from_settings(self.settings),
            ca_bundle=self.settings.webhooks_ca_bundle,
            resolver=resolver,
            sender=sender,
            name=name,
            concurrency=concurrency,
        )


def make_rig(
    url: str, home: Path, certificates: LoopbackCertificates, resolver: Resolver = system_resolver
) -> WebhookRig:
    """A ``WebhookRig`` on the control plane at ``url`` (migrated here), its clock at the real
    time now (so receivers' five-minute timestamp check passes until a test moves it)."""
    settings = webhook_settings(home, certificates, database_url=url)
    engine = engine_for(upgraded(url))
    clock = ManualClock(dt.datetime.now(dt.UTC).replace(microsecond=0))
    accounts = AccountStore(engine, clock)
    endpoints = WebhookEndpoints(
        engine,
        clock,
        accounts,
        SecretBox.from_settings(settings),
        UrlPolicy.from_settings(settings),
        resolver,
    )
    return WebhookRig(settings, engine, clock, accounts, endpoints)


@pytest.fixture
def rig(
    control_plane_url: str, tmp_path: Path, test_certificates: LoopbackCertificates
) -> WebhookRig:
    """A ``WebhookRig`` on SQLite and on PostgreSQL (a fresh database each)."""
    return make_rig(control_plane_url, tmp_path / "home", test_certificates)
