"""Quotas: refused counts per window, distinct entities and as_of dates per day, the usage log,
blocked IP addresses.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add usage_counters.refused; create usage_distinct, usage_log and blocked_ips."""
    with op.batch_alter_table("usage_counters") as batch:
        batch.add_column(sa.Column("refused", sa.BigInteger, nullable=False, server_default="0"))
    op.create_table(
        "usage_distinct",
        sa.Column("subject", sa.String(64), primary_key=True),
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("kind", sa.String(16), primary_key=True),
        sa.Column("value", sa.String(32), primary_key=True),
    )
    op.create_table(
        "usage_log",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("subject", sa.String(64), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("endpoint", sa.String(64), nullable=False),
        sa.Column("status", sa.Integer, nullable=False),
        sa.Column("requests", sa.Integer, nullable=False),
        sa.Column("rows", sa.Integer, nullable=False),
    )
    op.create_index("ix_usage_log_subject_at", "usage_log", ["subject", "at"])
    op.create_table(
        "blocked_ips",
        sa.Column("ip", sa.String(64), primary_key=True),
        sa.Column("blocked_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    """Drop them again."""
    op.drop_table("blocked_ips")
    op.drop_index("ix_usage_log_subject_at", "usage_log")
    op.drop_table("usage_log")
    op.drop_table("usage_distinct")
    with op.batch_alter_table("usage_counters") as batch:
        batch.drop_column("refused")
