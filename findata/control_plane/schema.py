"""Control-plane tables (SQLAlchemy Core). Alembic migrations under ``migrations/`` create them."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

#: one row per published version of the datasets; the current one is the newest row
versions = sa.Table(
    "versions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("label", sa.String(64), nullable=False, unique=True),
    sa.Column("file_name", sa.String(255), nullable=False),
    sa.Column("run_id", sa.String(64), nullable=False),
    sa.Column("published_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("content_hash", sa.String(64), nullable=False),
    sa.Column("data_through", sa.JSON, nullable=False),  # dataset -> last date with data
    sa.Column("row_counts", sa.JSON, nullable=False),  # dataset -> rows
)

#: the change feed: one record per entity (or index) and dataset that a version changed
change_records = sa.Table(
    "change_records",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),  # the feed cursor
    sa.Column("version_id", sa.ForeignKey("versions.id"), nullable=False, index=True),
    sa.Column("dataset", sa.String(64), nullable=False),
    sa.Column("scope", sa.String(64), nullable=False),
    sa.Column("entity", sa.String(64), nullable=False),  # entity id, manager id or index code
    sa.Column("change", sa.String(16), nullable=False),  # added, changed, removed, rebuild
    sa.Column("start", sa.Date, nullable=True),
    sa.Column("end", sa.Date, nullable=True),
    sa.Column("rows", sa.Integer, nullable=False),
    sa.Column("url", sa.String(2048), nullable=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, index=True),
)

#: events announced to webhook subscribers (the sender fans them out to endpoints)
events = sa.Table(
    "events",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("event_id", sa.String(32), nullable=False, unique=True),  # evt_ + 24 hex
    sa.Column("type", sa.String(64), nullable=False),
    sa.Column("version_id", sa.ForeignKey("versions.id"), nullable=True),
    sa.Column("payload", sa.JSON, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, index=True),
)

#: messages for an account's e-mail address, kept until the mailer sends them (an outbox: a
#: message is retried until sent; one that carries a secret link is stored encrypted)
account_notices = sa.Table(
    "account_notices",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("account_id", sa.String(32), nullable=False, index=True),
    sa.Column("email", sa.String(320), nullable=False),  # the account's address at the time
    sa.Column("kind", sa.String(64), nullable=False),
    sa.Column("subject", sa.String(255), nullable=False),
    sa.Column("body", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
    # the mailer's retries (0005)
    sa.Column("sensitive", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("last_error", sa.String(255), nullable=True),
)
