"""Dashboard: server-side sessions (sign-out ends one), API key labels.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``dashboard_sessions``; add ``api_keys.label``."""
    op.create_table(
        "dashboard_sessions",
        sa.Column("token_hash", sa.String(64), primary_key=True),
        sa.Column(
            "account_id",
            sa.String(32),
            sa.ForeignKey("accounts.id"),
            nullable=False,
            index=True,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False, index=True),
        sa.Column("once", sa.Text, nullable=True),
    )
    with op.batch_alter_table("api_keys") as batch:
        batch.add_column(sa.Column("label", sa.String(64), nullable=True))


def downgrade() -> None:
    """Drop ``api_keys.label`` and ``dashboard_sessions`` (everyone is signed out)."""
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("label")
    op.drop_table("dashboard_sessions")
