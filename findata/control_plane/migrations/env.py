"""Alembic environment: runs the control-plane migrations on the configured URL."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context

from findata.control_plane.schema import metadata

config = context.config


def run_migrations() -> None:
    """Migrate the database named by ``sqlalchemy.url`` (online: with a live connection)."""
    engine = sa.create_engine(config.get_main_option("sqlalchemy.url"), poolclass=sa.NullPool)
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=metadata,
            render_as_batch=connection.dialect.name == "sqlite",
        )
        with context.begin_transaction():
            context.run_migrations()


run_migrations()
