"""Published versions, the change feed and events.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create versions, change_records and events."""
    op.create_table(
        "versions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("label", sa.String(64), nullable=False, unique=True),
        sa.Column("file_name", sa.String(255), nullable=False),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("data_through", sa.JSON, nullable=False),
        sa.Column("row_counts", sa.JSON, nullable=False),
    )
    op.create_table(
        "change_records",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("version_id", sa.Integer, sa.ForeignKey("versions.id"), nullable=False),
        sa.Column("dataset", sa.String(64), nullable=False),
        sa.Column("scope", sa.String(64), nullable=False),
        sa.Column("entity", sa.String(64), nullable=False),
        sa.Column("change", sa.String(16), nullable=False),
        sa.Column("start", sa.Date, nullable=True),
        sa.Column("end", sa.Date, nullable=True),
        sa.Column("rows", sa.Integer, nullable=False),
        sa.Column("url", sa.String(2048), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_change_records_version_id", "change_records", ["version_id"])
    op.create_index("ix_change_records_created_at", "change_records", ["created_at"])
    op.create_table(
        "events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("event_id", sa.String(32), nullable=False, unique=True),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("version_id", sa.Integer, sa.ForeignKey("versions.id"), nullable=True),
        sa.Column("payload", sa.JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_events_created_at", "events", ["created_at"])


def downgrade() -> None:
    """Drop them."""
    op.drop_table("events")
    op.drop_table("change_records")
    op.drop_table("versions")
