"""The durable delivery worker: fan events out, send what is due, record every outcome.

Run it as ``findata webhooks worker`` (or inside ``findata serve --webhooks``); several may run
against one control plane. Each round: count interrupted attempts of dead workers as failures,
create deliveries for new events, then keep up to ``concurrency`` sends going, claiming due
deliveries as sends finish. All state is in the control plane, so a worker can be killed at
any point.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa

from findata.clock import Clock
from findata.logs import log_fields
from findata.settings import Settings
from findata.webhooks import deliveries
from findata.webhooks.deliveries import Claim, LeaseLost
from findata.webhooks.sender import SendResult, post_signed
from findata.webhooks.signing import SecretBox, signed_headers
from findata.webhooks.subscribers import SubscriberDirectory
from findata.webhooks.url_safety import Resolver, UnsafeUrl, UrlPolicy, check_url, system_resolver

log = logging.getLogger("findata.webhooks")

#: sends one signed body to a checked URL (``sender.post_signed``; tests may wrap it)
Sender = Callable[..., SendResult]


@dataclass
class RoundReport:
    """What one round did."""

    recovered: int = 0
    fanned_out: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)

    @property
    def attempts(self) -> int:
        """Attempts made in this round."""
        return sum(self.outcomes.values())


class DeliveryWorker:
    """Sends due deliveries from the control plane (see the module doc)."""

    def __init__(
        self,
        engine: sa.Engine,
        clock: Clock,
        subscribers: SubscriberDirectory,
        box: SecretBox,
        policy: UrlPolicy,
        *,
        ca_bundle: Path | None = None,
        resolver: Resolver = system_resolver,
        sender: Sender = post_signed,
        concurrency: int = 8,
        name: str | None = None,
    ) -> None:
        self.engine = engine
        self.clock = clock
        # host:pid:random, within the 64 characters of lease_owner and webhook_attempts.worker
        self.name = name or f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(3)}"
        self._subscribers = subscribers
        self._box = box
        self._policy = policy
        self._ca_bundle = ca_bundle
        self._resolver = resolver
        self._sender = sender
        self._concurrency = concurrency

    @classmethod
    def from_settings(
        cls, settings: Settings, engine: sa.Engine, clock: Clock, subscribers: SubscriberDirectory
    ) -> DeliveryWorker:
        """A worker configured by ``FINDATA_*`` settings."""
        return cls(
            engine,
            clock,
            subscribers,
            SecretBox.from_settings(settings),
            UrlPolicy.from_settings(settings),
            ca_bundle=settings.webhooks_ca_bundle,
        )

    def run_once(self, stop: threading.Event | None = None) -> RoundReport:
        """One round: recover, fan out, send everything due now, prune the log. Once ``stop``
        is set no more deliveries are claimed: the sends in flight finish and are recorded."""
        now = self.clock.now()
        recovered = deliveries.recover_interrupted(self.engine, self.name, now, self._subscribers)
        # looked up once a round: a pause meanwhile still stops claims (they re-check the state),
        # a plan change counts from the next round
        endpoints = deliveries.active_endpoints(self.engine, self._subscribers)
        receiving = [endpoint.id for endpoint in endpoints if endpoint.receives]
        report = RoundReport(recovered, deliveries.fan_out(self.engine, endpoints, now))
        with ThreadPoolExecutor(self._concurrency, thread_name_prefix="webhook-send") as pool:
            sending: set[Future[str | None]] = set()
            while True:
                # claim as sends finish, so one slow endpoint does not hold up the others
                stopping = stop is not None and stop.is_set()
                if (free := self._concurrency - len(sending)) and not stopping:
                    claims = deliveries.claim_due(
                        self.engine,
                        self.name,
                        self.clock.now(),
                        receiving,
                        free,
                    )
                    sending |= {pool.submit(self._attempt, claim) for claim in claims}
                if not sending:
                    break
                done, sending = wait(sending, return_when=FIRST_COMPLETED)
                for future in done:
                    if (status := future.result()) is not None:
                        report.outcomes[status] = report.outcomes.get(status, 0) + 1
        deliveries.prune_log(self.engine, self.clock.now())
        return report

    def run(self, stop: threading.Event, poll_seconds: float) -> None:
        """Rounds every ``poll_seconds`` until ``stop`` is set; a failed round is logged."""
        log.info("webhook worker %s started", self.name)
        while not stop.is_set():
            try:
                report = self.run_once(stop)
                if report.attempts or report.recovered:
                    log.info("webhook round: %s", report)
            except Exception:  # the next round retries; nothing is lost, state is in the DB
                log.exception("webhook round failed")
            stop.wait(poll_seconds)

    def _attempt(self, claim: Claim) -> str | None:
        """Check the URL again, sign now, send, record; returns the delivery's new status."""
        started = time.perf_counter()
        result = self._send(claim)
        try:
            status = deliveries.settle(
                self.engine, claim, result, self.name, self.clock.now(), self._subscribers
            )
        except LeaseLost:  # held past its lease, or the endpoint was removed meanwhile
            log.warning("delivery %s attempt %s: lease lost", claim.delivery_id, claim.attempt)
            return None
        # one line per attempt; never the URL (its query may carry the subscriber's token)
        log.info(
            "delivery %s attempt %s: %s",
            claim.delivery_id,
            claim.attempt,
            status,
            extra=log_fields(
                ("delivery_id", "attempt", "status"),
                delivery_id=claim.delivery_id,
                attempt=claim.attempt,
                endpoint_id=claim.endpoint_id,
                account_id=claim.account_id,
                status=status,
                http_status=result.http_status,
                error=result.error,
                duration_ms=round((time.perf_counter() - started) * 1000, 3),
            ),
        )
        return status

    def _send(self, claim: Claim) -> SendResult:
        try:
            checked = check_url(claim.url, self._policy, self._resolver)
        except UnsafeUrl as error:
            return SendResult(None, f"URL refused: {error}"[:255])
        signed_at = self.clock.now()
        signing = [self._box.open(sealed) for sealed in claim.sealed_secrets]
        headers = signed_headers(claim.event_id, signed_at, claim.body, signing)
        return self._sender(checked, headers, claim.body.encode(), ca_bundle=self._ca_bundle)
