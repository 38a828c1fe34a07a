"""Endpoint management (spec: "Endpoint management rules", "States and transitions"): the
operations the CLI calls now and the dashboard will call.

Refusals raise ``WebhookRefused`` with the HTTP status and error code the dashboard will answer
with; a refused operation changes nothing.
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import asdict, dataclass

import sqlalchemy as sa

from findata.clock import Clock, as_utc
from findata.webhooks import deliveries
from findata.webhooks.events import TEST, newest_data_changed_id, record_test_event
from findata.webhooks.schedule import LOG_RETENTION, LOG_SIZE
from findata.webhooks.signing import SecretBox, new_signing_secret
from findata.webhooks.subscribers import (
    Subscriber,
    SubscriberDirectory,
    endpoint_allowance,
    plan_has_webhooks,
)
from findata.webhooks.tables import webhook_attempts as A
from findata.webhooks.tables import webhook_deliveries as D
from findata.webhooks.tables import webhook_endpoints as E
from findata.webhooks.url_safety import Resolver, UnsafeUrl, UrlPolicy, check_url, system_resolver

#: a previous secret keeps signing this long after a rotation
PREVIOUS_SECRET_SIGNS_FOR = dt.timedelta(hours=24)
#: how the log names delivery statuses (spec: Pending, Delivered, Failed, No retries left)
STATUS_NAMES = {
    "pending": "Pending",
    "delivering": "Pending",
    "delivered": "Delivered",
    "failed": "Failed",
    "no_retries_left": "No retries left",
}
RESENDABLE = ("failed", "no_retries_left")


class WebhookRefused(Exception):
    """A refused management operation: HTTP status, error code and the reason."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass(frozen=True)
class Endpoint:
    """An endpoint as listed (never its secret)."""

    endpoint_id: str
    account_id: str
    url: str
    state: str
    state_reason: str | None
    state_changed_at: dt.datetime
    created_at: dt.datetime
    receives_events: bool  # false while the account's plan has no webhooks

    def as_json(self) -> dict[str, object]:
        """The JSON the CLI prints."""
        return asdict(self)


@dataclass(frozen=True)
class SecretShown:
    """An endpoint with the secret that is shown this once."""

    endpoint: Endpoint
    secret: str


@dataclass(frozen=True)
class LogEntry:
    """One delivery in an endpoint's log."""

    delivery_id: str
    time: dt.datetime
    event_id: str
    event_type: str
    attempt: int
    status: str
    http_status: int | None
    next_attempt_at: dt.datetime | None
    error: str | None
    resend_of: str | None


class WebhookEndpoints:
    """Add, list, pause, resume, test, resend, rotate, remove and read the log of endpoints.

    ``account_id`` on an operation scopes it to that account's endpoints (the dashboard passes
    the signed-in account); the operator CLI leaves it out.
    """

    def __init__(
        self,
        engine: sa.Engine,
        clock: Clock,
        subscribers: SubscriberDirectory,
        box: SecretBox,
        policy: UrlPolicy,
        resolver: Resolver = system_resolver,
    ) -> None:
        self.engine = engine
        self._clock = clock
        self._subscribers = subscribers
        self._box = box
        self._policy = policy
        self._resolver = resolver

    def add(self, account_id: str, url: str) -> SecretShown:
        """A new Active endpoint for ``url``; its secret is returned this once."""
        subscriber = self._subscribers.get_account(account_id)
        _require_webhooks(subscriber)
        try:
            check_url(url, self._policy, self._resolver)
        except UnsafeUrl as error:
            raise WebhookRefused(400, "invalid_url", f"URL refused: {error}.") from error
        secret = new_signing_secret()
        now = self._clock.now()
        endpoint_id = "we_" + secrets.token_hex(10)
        with self.engine.begin() as connection:
            _lock_account_endpoints(connection, account_id)
            count = connection.scalar(
                sa.select(sa.func.count()).select_from(E).where(E.c.account_id == account_id)
            )
            allowed = endpoint_allowance(subscriber)
            if count >= allowed:
                raise WebhookRefused(
                    409,
                    "endpoint_limit_reached",
                    f"The {subscriber.plan} plan allows {allowed} webhook endpoints and this "
                    "account has them all; remove one first.",
                )
            connection.execute(
                sa.insert(E).values(
                    id=endpoint_id,
                    account_id=account_id,
                    url=url,
                    state="active",
                    state_changed_at=now,
                    secret_encrypted=self._box.seal(secret),
                    # a new endpoint receives the events after it was added, not the old ones
                    events_through=newest_data_changed_id(connection),
                    created_at=now,
                )
            )
        return SecretShown(self.get(endpoint_id), secret)

    def list(self, account_id: str) -> list[Endpoint]:
        """Every endpoint of the account, oldest first (also on a plan without webhooks)."""
        self._subscribers.get_account(account_id)
        with self.engine.connect() as connection:
            rows = connection.execute(
                sa.select(E).where(E.c.account_id == account_id).order_by(E.c.created_at, E.c.id)
            ).all()
        return [self._endpoint(row) for row in rows]

    def get(self, endpoint_id: str, account_id: str | None = None) -> Endpoint:
        """One endpoint (404 when there is none, or it is another account's)."""
        with self.engine.connect() as connection:
            return self._endpoint(_endpoint_row(connection, endpoint_id, account_id))

    def pause(self, endpoint_id: str, account_id: str | None = None) -> Endpoint:
        """Active → Paused: all sending stops until Resume (Paused or Disabled stay as they are)."""
        now = self._clock.now()
        with self.engine.begin() as connection:
            row = self._changeable(connection, endpoint_id, account_id)
            if row.state == "active":
                # events announced before the pause keep their deliveries (sent after Resume)
                deliveries.fan_out_endpoint(connection, row.id, row.events_through, now, True)
                connection.execute(
                    sa.update(E)
                    .where(E.c.id == row.id)
                    .values(state="paused", state_reason="paused", state_changed_at=now)
                )
        return self.get(endpoint_id)

    def resume(self, endpoint_id: str, account_id: str | None = None) -> Endpoint:
        """Paused or Disabled → Active; events created meanwhile are skipped for good, and the
        three-day failure count restarts."""
        now = self._clock.now()
        with self.engine.begin() as connection:
            row = self._changeable(connection, endpoint_id, account_id)
            if row.state != "active":
                connection.execute(
                    sa.update(E)
                    .where(E.c.id == row.id)
                    .values(
                        state="active",
                        state_reason=None,
                        state_changed_at=now,
                        failing_since=None,
                        events_through=newest_data_changed_id(connection),
                    )
                )
        return self.get(endpoint_id)

    def remove(self, endpoint_id: str, account_id: str | None = None) -> Endpoint:
        """Delete the endpoint with its deliveries and log (allowed on every plan, so an account
        that left Max can still clean up); frees a place in the plan's allowance."""
        endpoint = self.get(endpoint_id, account_id)
        with self.engine.begin() as connection:
            _endpoint_row(connection, endpoint_id, account_id, lock=True)
            ids = sa.select(D.c.id).where(D.c.endpoint_id == endpoint_id)
            connection.execute(sa.delete(A).where(A.c.delivery_id.in_(ids)))
            connection.execute(sa.delete(D).where(D.c.endpoint_id == endpoint_id))
            connection.execute(sa.delete(E).where(E.c.id == endpoint_id))
        return endpoint

    def rotate_secret(self, endpoint_id: str, account_id: str | None = None) -> SecretShown:
        """A new secret, shown once; the current one keeps signing beside it for 24 hours."""
        now = self._clock.now()
        secret = new_signing_secret()
        with self.engine.begin() as connection:
            row = self._changeable(connection, endpoint_id, account_id)
            connection.execute(
                sa.update(E)
                .where(E.c.id == row.id)
                .values(
                    secret_encrypted=self._box.seal(secret),
                    previous_secret_encrypted=row.secret_encrypted,
                    previous_secret_until=now + PREVIOUS_SECRET_SIGNS_FOR,
                )
            )
        return SecretShown(self.get(endpoint_id), secret)

    def send_test(self, endpoint_id: str, account_id: str | None = None) -> LogEntry:
        """Queue a ``webhook.test`` event (only id, type, created) for the endpoint, due now."""
        now = self._clock.now()
        with self.engine.begin() as connection:
            row = self._changeable(connection, endpoint_id, account_id)
            if row.state != "active":
                raise WebhookRefused(
                    409,
                    "endpoint_not_active",
                    f"The endpoint is {row.state}; nothing is sent to it. Resume it first.",
                )
            event_id = record_test_event(connection, now)
            delivery_id = deliveries.insert_delivery(connection, row.id, event_id, TEST, now)
        return self.delivery(delivery_id)

    def resend(self, delivery_id: str, account_id: str | None = None) -> LogEntry:
        """A new delivery of a Failed or No-retries-left delivery's event: same event id, new
        timestamp and signature when it is sent."""
        now = self._clock.now()
        with self.engine.begin() as connection:
            source = connection.execute(sa.select(D).where(D.c.id == delivery_id)).first()
            if source is None:
                raise WebhookRefused(404, "not_found", f"No delivery {delivery_id}.")
            self._changeable(connection, source.endpoint_id, account_id)
            if source.status not in RESENDABLE:
                raise WebhookRefused(
                    409,
                    "not_resendable",
                    f"Delivery {delivery_id} is {STATUS_NAMES[source.status]}; only Failed and "
                    "No retries left deliveries can be resent.",
                )
            new_id = deliveries.insert_delivery(
                connection, source.endpoint_id, source.event_id, source.event_type, now, delivery_id
            )
        return self.delivery(new_id)

    def log(self, endpoint_id: str, account_id: str | None = None) -> list[LogEntry]:
        """The 50 most recent deliveries of the last 30 days, newest first."""
        since = self._clock.now() - LOG_RETENTION
        with self.engine.connect() as connection:
            _endpoint_row(connection, endpoint_id, account_id)
            rows = connection.execute(
                sa.select(D)
                .where(D.c.endpoint_id == endpoint_id, D.c.created_at >= since)
                .order_by(D.c.created_at.desc(), D.c.id.desc())
                .limit(LOG_SIZE)
            ).all()
        return [_log_entry(row) for row in rows]

    def delivery(self, delivery_id: str) -> LogEntry:
        """One delivery as the log shows it."""
        with self.engine.connect() as connection:
            row = connection.execute(sa.select(D).where(D.c.id == delivery_id)).first()
        if row is None:
            raise WebhookRefused(404, "not_found", f"No delivery {delivery_id}.")
        return _log_entry(row)

    def _changeable(
        self, connection: sa.Connection, endpoint_id: str, account_id: str | None
    ) -> sa.Row:
        """The endpoint's row, locked, when its account may change it (402 otherwise)."""
        row = _endpoint_row(connection, endpoint_id, account_id, lock=True)
        _require_webhooks(self._subscribers.get_account(row.account_id))
        return row

    def _endpoint(self, row: sa.Row) -> Endpoint:
        return Endpoint(
            row.id,
            row.account_id,
            row.url,
            row.state,
            row.state_reason,
            as_utc(row.state_changed_at),
            as_utc(row.created_at),
            plan_has_webhooks(self._subscribers.get_account(row.account_id)),
        )


def _require_webhooks(subscriber: Subscriber) -> None:
    """402 unless the account's plan has webhooks."""
    if not plan_has_webhooks(subscriber):
        raise WebhookRefused(
            402,
            "upgrade_required",
            "Webhooks are part of the Max and Redistribution plans. Upgrade to add, change, "
            "test or resend webhook endpoints.",
        )


def _endpoint_row(
    connection: sa.Connection, endpoint_id: str, account_id: str | None, lock: bool = False
) -> sa.Row:
    query = sa.select(E).where(E.c.id == endpoint_id)
    if account_id is not None:
        query = query.where(E.c.account_id == account_id)
    if lock:
        if connection.dialect.name == "sqlite":
            # the write lock first, so the read below sees every committed change
            connection.execute(sa.update(E).where(E.c.id == endpoint_id).values(id=E.c.id))
        else:
            query = query.with_for_update()
    row = connection.execute(query).first()
    if row is None:
        raise WebhookRefused(404, "not_found", f"No webhook endpoint {endpoint_id}.")
    return row


def _lock_account_endpoints(connection: sa.Connection, account_id: str) -> None:
    """Serialise adds per account so two at once cannot pass the plan's endpoint limit: the
    account row's lock on PostgreSQL, the database write lock on SQLite (as accounts/ does)."""
    connection.execute(sa.text("UPDATE accounts SET id = id WHERE id = :id"), {"id": account_id})


def _log_entry(row: sa.Row) -> LogEntry:
    return LogEntry(
        row.id,
        as_utc(row.last_attempt_at or row.created_at),
        row.event_id,
        row.event_type,
        row.attempts,
        STATUS_NAMES[row.status],
        row.last_http_status,
        as_utc(row.next_attempt_at) if row.next_attempt_at and row.status != "delivered" else None,
        row.last_error,
        row.resend_of,
    )
