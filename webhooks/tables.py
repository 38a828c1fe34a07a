"""Webhook endpoints, deliveries and attempts (SQLAlchemy Core); migration 0004 creates them.

A delivery is one event for one endpoint; an attempt is one signed POST of it. An attempt row is
written (``in_flight``) before its POST goes out, so a worker that dies mid-send leaves a record
that the next worker counts as a failed attempt instead of sending that attempt again.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

#: one row per subscriber URL; secrets are stored encrypted (the sender must sign with them)
webhook_endpoints = sa.Table(
    "webhook_endpoints",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),  # we_ + 20 hex
    sa.Column("account_id", sa.String(32), nullable=False, index=True),
    sa.Column("url", sa.String(2048), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),  # active | paused | disabled
    sa.Column("state_reason", sa.String(255), nullable=True),
    sa.Column("state_changed_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("secret_encrypted", sa.Text, nullable=False),
    sa.Column("previous_secret_encrypted", sa.Text, nullable=True),
    sa.Column("previous_secret_until", sa.DateTime(timezone=True), nullable=True),
    # events.id of the newest event considered for this endpoint: later ones are fanned out
    sa.Column("events_through", sa.Integer, nullable=False),
    # first failed attempt since the last success (or resume): three days of it disables
    sa.Column("failing_since", sa.DateTime(timezone=True), nullable=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)

#: one event to one endpoint; a resend is a new delivery of the same event
webhook_deliveries = sa.Table(
    "webhook_deliveries",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),  # dlv_ + 20 hex
    sa.Column(
        "endpoint_id",
        sa.String(32),
        sa.ForeignKey("webhook_endpoints.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("event_id", sa.String(32), nullable=False),  # events.event_id
    sa.Column("event_type", sa.String(64), nullable=False),
    # pending | delivering | delivered | failed | no_retries_left
    sa.Column("status", sa.String(24), nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("lease_owner", sa.String(64), nullable=True),
    sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
    sa.Column("last_attempt_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("last_http_status", sa.Integer, nullable=True),
    sa.Column("last_error", sa.String(255), nullable=True),
    sa.Column("resend_of", sa.String(32), nullable=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
    sa.Index("ix_webhook_deliveries_endpoint", "endpoint_id", "created_at"),
)

#: one signed POST; outcome in_flight until the sender records what happened
webhook_attempts = sa.Table(
    "webhook_attempts",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "delivery_id",
        sa.String(32),
        sa.ForeignKey("webhook_deliveries.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("number", sa.Integer, nullable=False),
    sa.Column("worker", sa.String(64), nullable=False),
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    # in_flight | delivered | failed | interrupted
    sa.Column("outcome", sa.String(16), nullable=False),
    sa.Column("http_status", sa.Integer, nullable=True),
    sa.Column("error", sa.String(255), nullable=True),
    sa.UniqueConstraint("delivery_id", "number", name="uq_webhook_attempts_number"),
)
