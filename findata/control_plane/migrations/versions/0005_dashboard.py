"""Dashboard: passwords and sign-in attempts, invitations, billing periods and invoices, key
last use, the mail outbox's retries.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

ACCOUNT_COLUMNS = [
    sa.Column("password_hash", sa.String(255), nullable=True),
    sa.Column("email_verified_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("password_changed_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("billing_interval", sa.String(16), nullable=True),
    sa.Column("trial_cancelled_at", sa.DateTime(timezone=True), nullable=True),
]
NOTICE_COLUMNS = [
    sa.Column("sensitive", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("last_error", sa.String(255), nullable=True),
]


def upgrade() -> None:
    """Add the columns and create the tables of the dashboard."""
    with op.batch_alter_table("accounts") as batch:
        for column in ACCOUNT_COLUMNS:
            batch.add_column(column)
    with op.batch_alter_table("api_keys") as batch:
        batch.add_column(sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("account_notices") as batch:
        for column in NOTICE_COLUMNS:
            batch.add_column(column)
    op.create_table(
        "sign_in_attempts",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("subject", sa.String(400), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("succeeded", sa.Boolean, nullable=False),
    )
    op.create_index("ix_sign_in_attempts_subject_at", "sign_in_attempts", ["subject", "at"])
    op.create_table(
        "invitations",
        sa.Column("code_hash", sa.String(64), primary_key=True),
        sa.Column("plan", sa.String(32), nullable=False),
        sa.Column("redeem_by", sa.Date, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("redeemed_by", sa.String(32), nullable=True),
        sa.Column("redeemed_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_table(
        "subscription_periods",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("account_id", sa.String(32), nullable=False, index=True),
        sa.Column("plan", sa.String(32), nullable=False),
        sa.Column("interval", sa.String(16), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("starts_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ends_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("invoice_id", sa.String(32), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "invoices",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("account_id", sa.String(32), nullable=False, index=True),
        sa.Column("plan", sa.String(32), nullable=False),
        sa.Column("interval", sa.String(16), nullable=False),
        sa.Column("period_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("period_end", sa.DateTime(timezone=True), nullable=False),
        sa.Column("amount_cents", sa.Integer, nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("provider_reference", sa.String(128), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    """Drop what upgrade created."""
    for table in ("invoices", "subscription_periods", "invitations", "sign_in_attempts"):
        op.drop_table(table)
    with op.batch_alter_table("account_notices") as batch:
        for column in NOTICE_COLUMNS:
            batch.drop_column(column.name)
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("last_used_at")
    with op.batch_alter_table("accounts") as batch:
        for column in ACCOUNT_COLUMNS:
            batch.drop_column(column.name)
