"""Usage batches written once: each serving process's last written batch number.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``usage_writes``."""
    op.create_table(
        "usage_writes",
        sa.Column("writer", sa.String(32), primary_key=True),
        sa.Column("last_batch", sa.BigInteger, nullable=False),
        sa.Column("written_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    """Drop ``usage_writes``."""
    op.drop_table("usage_writes")
