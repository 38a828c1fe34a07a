"""Benchmark: webhook delivery throughput of one worker, over real HTTPS on loopback.

    .venv/bin/python benchmarks/webhook_delivery.py            # SQLite in a temp home
    .venv/bin/python benchmarks/webhook_delivery.py --database-url postgresql+psycopg://…/db
    .venv/bin/python benchmarks/webhook_delivery.py --endpoints 50 --events 40 --concurrency 16

Creates Redistribution accounts with E endpoints on a local HTTPS receiver (a throw-away CA,
under the UNSAFE loopback setting), records N ``data.changed`` events the way publish does, then
times one worker round: the fan-out (E × N deliveries) and the sends (each attempt: URL check,
signing, a TLS connection, the POST, the outcome written). Prints deliveries per second and the
receiver's count. The receiver answers at once, so the figure is the sender's own cost.
"""

from __future__ import annotations

import argparse
import datetime as dt
import secrets
import ssl
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import sqlalchemy as sa

from findata.accounts.store import AccountStore
from findata.clock import SystemClock
from findata.control_plane import schema
from findata.control_plane.database import engine_for, upgrade
from findata.settings import Settings
from findata.webhooks.dev_tls import make_loopback_certificates
from findata.webhooks.endpoints import WebhookEndpoints
from findata.webhooks.signing import SecretBox
from findata.webhooks.url_safety import UrlPolicy
from findata.webhooks.worker import DeliveryWorker


class _DeepQueueServer(ThreadingHTTPServer):
    """A deep accept queue (TLS handshakes run in the request threads): with the defaults,
    concurrent senders overflow the backlog of 5 and wait for a SYN retry (1 s)."""

    request_queue_size = 128
    daemon_threads = True


def _receiver(cert: Path, key: Path) -> tuple[ThreadingHTTPServer, list[int]]:
    """An HTTPS server on loopback that answers 204 and counts requests."""
    counted = [0]
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            with lock:
                counted[0] += 1
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = _DeepQueueServer(("127.0.0.1", 0), Handler)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(
        server.socket, server_side=True, do_handshake_on_connect=False
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, counted


def _announce(engine: sa.Engine, events: int) -> None:
    now = dt.datetime.now(dt.UTC)
    with engine.begin() as connection:
        for _ in range(events):
            event_id = "evt_" + secrets.token_hex(12)
            connection.execute(
                sa.insert(schema.events).values(
                    event_id=event_id,
                    type="data.changed",
                    version_id=None,
                    payload={"id": event_id, "type": "data.changed", "created": f"{now:%FT%TZ}"},
                    created_at=now,
                )
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", help="control plane (default: SQLite in a temp home)")
    parser.add_argument("--endpoints", type=int, default=20)
    parser.add_argument("--events", type=int, default=25)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="findata-bench-webhooks-"))
    tls = make_loopback_certificates(home / "tls")
    settings = Settings(
        home=home,
        database_url=args.database_url,
        webhooks_allow_private=True,
        webhooks_ca_bundle=tls.ca,
    )
    upgrade(settings.control_plane_url)
    engine = engine_for(settings.control_plane_url)
    clock = SystemClock()
    accounts = AccountStore(engine, clock)
    box, policy = SecretBox.from_settings(settings), UrlPolicy.from_settings(settings)
    manage = WebhookEndpoints(engine, clock, accounts, box, policy)
    server, received = _receiver(tls.cert, tls.key)
    port = server.server_address[1]
    account = None
    for number in range(args.endpoints):
        if number % 10 == 0:
            account = accounts.create_account(
                f"{uuid.uuid4().hex[:12]}@example.com", "redistribution"
            )
        assert account is not None
        manage.add(account.id, f"https://localhost:{port}/hook/{number}")
    _announce(engine, args.events)

    worker = DeliveryWorker(
        engine, clock, accounts, box, policy, ca_bundle=tls.ca, concurrency=args.concurrency
    )
    started = time.perf_counter()
    report = worker.run_once()
    elapsed = time.perf_counter() - started
    sent = report.outcomes.get("delivered", 0)
    print(f"control plane: {engine.dialect.name}; concurrency {args.concurrency}")
    print(
        f"{args.endpoints} endpoints × {args.events} events: fan-out {report.fanned_out} "
        f"deliveries; delivered {sent} (receiver counted {received[0]}) in {elapsed:.2f} s "
        f"= {sent / elapsed:.0f} deliveries/s"
    )
    server.shutdown()


if __name__ == "__main__":
    main()
