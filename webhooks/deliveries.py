"""The delivery queue in the control plane: fan-out, claims, outcomes, recovery, pruning.

Every step is one short transaction whose first statement writes, so on SQLite concurrent
workers queue on the write lock (with ``busy_timeout``) and each conditional update sees the
other's commit; on PostgreSQL claims take ``FOR UPDATE SKIP LOCKED`` row locks. A claim moves a
delivery to ``delivering`` under a lease and writes its attempt row before anything is sent:
attempt numbers are unique per delivery, so no attempt is ever sent twice, and an attempt whose
worker died is found by its expired lease and counted as a failure (the retry is a new attempt).
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass

import sqlalchemy as sa

from findata.clock import as_utc
from findata.control_plane import schema
from findata.webhooks.events import DATA_CHANGED, TEST, event_body, newest_data_changed_id
from findata.webhooks.schedule import DISABLE_AFTER_FAILING, LEASE, LOG_RETENTION, retry_at
from findata.webhooks.sender import SendResult
from findata.webhooks.subscribers import SubscriberDirectory, receives_webhooks
from findata.webhooks.tables import webhook_attempts, webhook_deliveries, webhook_endpoints

D = webhook_deliveries
E = webhook_endpoints
A = webhook_attempts
RETRYABLE = ("pending", "failed")
INTERRUPTED = "the worker stopped before the answer was recorded"


class LeaseLost(RuntimeError):
    """Another worker took the delivery over (this one held it past its lease)."""


@dataclass(frozen=True)
class Claim:
    """A delivery this worker now holds, with everything its attempt needs."""

    delivery_id: str
    attempt: int
    started_at: dt.datetime
    endpoint_id: str
    account_id: str
    url: str
    event_id: str
    body: str
    sealed_secrets: tuple[str, ...]  # current first; the previous one while it still signs


def new_delivery_id() -> str:
    """``dlv_`` + 20 hex characters."""
    return "dlv_" + secrets.token_hex(10)


def insert_delivery(
    connection: sa.Connection,
    endpoint_id: str,
    event_id: str,
    event_type: str,
    now: dt.datetime,
    resend_of: str | None = None,
) -> str:
    """A new pending delivery, due now; returns its id."""
    delivery_id = new_delivery_id()
    connection.execute(
        sa.insert(D).values(
            id=delivery_id,
            endpoint_id=endpoint_id,
            event_id=event_id,
            event_type=event_type,
            status="pending",
            attempts=0,
            next_attempt_at=now,
            resend_of=resend_of,
            created_at=now,
        )
    )
    return delivery_id


def fan_out_endpoint(
    connection: sa.Connection, endpoint_id: str, events_through: int, now: dt.datetime, send: bool
) -> int:
    """Deliveries of the ``data.changed`` events after ``events_through`` (none unless ``send``);
    moves the endpoint's mark past them. Returns how many deliveries were created."""
    newest = newest_data_changed_id(connection)
    if newest <= events_through:
        return 0
    moved = connection.execute(
        sa.update(E)
        # only while Active: an endpoint paused since the caller read it gets nothing new
        .where(E.c.id == endpoint_id, E.c.events_through == events_through, E.c.state == "active")
        .values(events_through=newest)
    ).rowcount
    if not moved or not send:
        return 0  # another worker fanned these out, or the account receives nothing
    new_events = connection.execute(
        sa.select(schema.events.c.event_id)
        .where(
            schema.events.c.id > events_through,
            schema.events.c.id <= newest,
            schema.events.c.type == DATA_CHANGED,
        )
        .order_by(schema.events.c.id)
    ).scalars()
    created = 0
    for event_id in new_events:
        insert_delivery(connection, endpoint_id, event_id, DATA_CHANGED, now)
        created += 1
    return created


@dataclass(frozen=True)
class ActiveEndpoint:
    """An Active endpoint as a round of the worker sees it."""

    id: str
    events_through: int
    receives: bool  # its account receives webhooks (plan and state)


def active_endpoints(engine: sa.Engine, subscribers: SubscriberDirectory) -> list[ActiveEndpoint]:
    """Every Active endpoint, each with whether its account receives webhooks now."""
    with engine.connect() as connection:
        rows = connection.execute(
            sa.select(E.c.id, E.c.account_id, E.c.events_through).where(E.c.state == "active")
        ).all()
    return [
        ActiveEndpoint(
            row.id, row.events_through, receives_webhooks(subscribers.get_account(row.account_id))
        )
        for row in rows
    ]


def fan_out(engine: sa.Engine, endpoints: list[ActiveEndpoint], now: dt.datetime) -> int:
    """Give every Active endpoint a delivery of each new ``data.changed`` event.

    Endpoints of accounts that receive nothing (a plan without webhooks, a disabled account)
    pass the events by. Paused and Disabled endpoints are skipped here; Resume moves their mark
    to the newest event, so what was created while they were off is never sent to them.
    """
    created = 0
    for endpoint in endpoints:
        with engine.begin() as connection:
            created += fan_out_endpoint(
                connection, endpoint.id, endpoint.events_through, now, endpoint.receives
            )
    return created


def claim_due(
    engine: sa.Engine, worker: str, now: dt.datetime, endpoint_ids: list[str], limit: int
) -> list[Claim]:
    """Take up to ``limit`` due deliveries of the given (Active, receiving) endpoints."""
    if not endpoint_ids:
        return []
    due = (
        sa.select(D.c.id)
        .where(
            D.c.status.in_(RETRYABLE),
            D.c.next_attempt_at <= now,
            D.c.endpoint_id.in_(endpoint_ids),
            sa.exists().where(E.c.id == D.c.endpoint_id, E.c.state == "active"),
        )
        .order_by(D.c.next_attempt_at, D.c.id)
        .limit(limit)
    )
    if engine.dialect.name == "postgresql":
        due = due.with_for_update(skip_locked=True)
    with engine.begin() as connection:
        taken = connection.execute(
            sa.update(D)
            .where(D.c.id.in_(due.scalar_subquery()), D.c.status.in_(RETRYABLE))
            .values(
                status="delivering",
                attempts=D.c.attempts + 1,
                lease_owner=worker,
                lease_until=now + LEASE,
                last_attempt_at=now,
            )
            .returning(D.c.id, D.c.attempts)
        ).all()
        for delivery_id, attempt in taken:
            connection.execute(
                sa.insert(A).values(
                    delivery_id=delivery_id,
                    number=attempt,
                    worker=worker,
                    started_at=now,
                    outcome="in_flight",
                )
            )
        return [_claim(connection, delivery_id, attempt, now) for delivery_id, attempt in taken]


def _claim(connection: sa.Connection, delivery_id: str, attempt: int, now: dt.datetime) -> Claim:
    row = connection.execute(
        sa.select(
            D.c.event_id,
            E.c.id.label("endpoint_id"),
            E.c.account_id,
            E.c.url,
            E.c.secret_encrypted,
            E.c.previous_secret_encrypted,
            E.c.previous_secret_until,
            schema.events.c.payload,
        )
        .join(E, E.c.id == D.c.endpoint_id)
        .join(schema.events, schema.events.c.event_id == D.c.event_id)
        .where(D.c.id == delivery_id)
    ).one()
    sealed = [row.secret_encrypted]
    if row.previous_secret_encrypted and as_utc(row.previous_secret_until) > now:
        sealed.append(row.previous_secret_encrypted)
    return Claim(
        delivery_id,
        attempt,
        now,
        row.endpoint_id,
        row.account_id,
        row.url,
        row.event_id,
        event_body(row.payload),
        tuple(sealed),
    )


def settle(
    engine: sa.Engine,
    claim: Claim,
    result: SendResult,
    worker: str,
    now: dt.datetime,
    subscribers: SubscriberDirectory,
) -> str:
    """Record an attempt's outcome and every transition it causes; returns the new status."""
    with engine.begin() as connection:
        return _settle(
            connection,
            claim.delivery_id,
            claim.attempt,
            claim.started_at,
            result,
            worker,
            now,
            subscribers,
        )


def _settle(
    connection: sa.Connection,
    delivery_id: str,
    attempt: int,
    started_at: dt.datetime,
    result: SendResult,
    worker: str,
    now: dt.datetime,
    subscribers: SubscriberDirectory,
    *,
    interrupted: bool = False,
) -> str:
    outcome = "delivered" if result.delivered else ("interrupted" if interrupted else "failed")
    connection.execute(
        sa.update(A)
        .where(A.c.delivery_id == delivery_id, A.c.number == attempt, A.c.outcome == "in_flight")
        .values(
            outcome=outcome, http_status=result.http_status, error=result.error, finished_at=now
        )
    )
    next_at = None if result.delivered else retry_at(attempt, started_at)
    status = "delivered" if result.delivered else ("failed" if next_at else "no_retries_left")
    moved = connection.execute(
        sa.update(D)
        .where(D.c.id == delivery_id, D.c.lease_owner == worker, D.c.status == "delivering")
        .values(
            status=status,
            next_attempt_at=next_at,
            lease_owner=None,
            lease_until=None,
            last_http_status=result.http_status,
            last_error=result.error,
        )
    ).rowcount
    if not moved:
        raise LeaseLost(f"delivery {delivery_id} attempt {attempt} is no longer held by {worker}")
    endpoint_id = connection.scalar(sa.select(D.c.endpoint_id).where(D.c.id == delivery_id))
    if result.delivered:
        connection.execute(sa.update(E).where(E.c.id == endpoint_id).values(failing_since=None))
    else:
        _count_failure(connection, endpoint_id, started_at, result, now, subscribers)
    return status


def _count_failure(
    connection: sa.Connection,
    endpoint_id: str,
    started_at: dt.datetime,
    result: SendResult,
    now: dt.datetime,
    subscribers: SubscriberDirectory,
) -> None:
    """410 disables at once; failures for three days disable with a notice to the account."""
    # locked: concurrent failures of one endpoint must disable it (and notify) once
    endpoint = connection.execute(sa.select(E).where(E.c.id == endpoint_id).with_for_update()).one()
    failing_since = as_utc(endpoint.failing_since) if endpoint.failing_since else started_at
    connection.execute(
        sa.update(E).where(E.c.id == endpoint_id).values(failing_since=failing_since)
    )
    if endpoint.state != "active":
        return
    if result.gone:
        disable(connection, endpoint, now, "the endpoint answered 410 Gone")
    elif now - failing_since >= DISABLE_AFTER_FAILING:
        disable(
            connection,
            endpoint,
            now,
            f"every delivery failed since {failing_since:%Y-%m-%d %H:%M} UTC",
        )
        account = subscribers.get_account(endpoint.account_id)
        connection.execute(
            sa.insert(schema.account_notices).values(
                account_id=account.id,
                email=account.email,
                kind="webhook_endpoint_disabled",
                subject="A webhook endpoint was disabled",
                body=(
                    f"Every delivery to {endpoint.url} (endpoint {endpoint.id}) has failed since "
                    f"{failing_since:%Y-%m-%d %H:%M} UTC, so the endpoint was disabled on "
                    f"{now:%Y-%m-%d %H:%M} UTC and receives no events. Fix the receiver, then "
                    "Resume the endpoint; events created while it is disabled are not sent later. "
                    "Read the change feed from your saved cursor to catch up."
                ),
                created_at=now,
            )
        )


def disable(connection: sa.Connection, endpoint: sa.Row, now: dt.datetime, reason: str) -> None:
    """Turn an Active endpoint off; events already announced keep their deliveries."""
    fan_out_endpoint(connection, endpoint.id, endpoint.events_through, now, send=True)
    connection.execute(
        sa.update(E)
        .where(E.c.id == endpoint.id)
        .values(state="disabled", state_reason=reason, state_changed_at=now)
    )


def recover_interrupted(
    engine: sa.Engine, worker: str, now: dt.datetime, subscribers: SubscriberDirectory
) -> int:
    """Count every attempt whose worker let its lease run out as a failed (interrupted) attempt."""
    with engine.begin() as connection:
        stale = connection.execute(
            sa.update(D)
            .where(D.c.status == "delivering", D.c.lease_until < now)
            .values(lease_owner=worker, lease_until=now + LEASE)
            .returning(D.c.id, D.c.attempts)
        ).all()
        for delivery_id, attempt in stale:
            started = connection.scalar(
                sa.select(A.c.started_at).where(
                    A.c.delivery_id == delivery_id, A.c.number == attempt
                )
            )
            _settle(
                connection,
                delivery_id,
                attempt,
                as_utc(started),
                SendResult(None, INTERRUPTED),
                worker,
                now,
                subscribers,
                interrupted=True,
            )
    return len(stale)


def prune_log(engine: sa.Engine, now: dt.datetime) -> int:
    """Delete finished deliveries (and their attempts) older than the log keeps them."""
    old = sa.select(D.c.id).where(
        D.c.created_at < now - LOG_RETENTION,
        D.c.status.in_(("delivered", "no_retries_left", "failed")),
    )
    events = schema.events
    with engine.begin() as connection:
        connection.execute(sa.delete(A).where(A.c.delivery_id.in_(old)))
        pruned = connection.execute(sa.delete(D).where(D.c.id.in_(old))).rowcount
        # test events live only for their deliveries (data.changed ones belong to the feed)
        connection.execute(
            sa.delete(events).where(
                events.c.type == TEST,
                events.c.created_at < now - LOG_RETENTION,
                ~sa.exists().where(D.c.event_id == events.c.event_id),
            )
        )
        return pruned
