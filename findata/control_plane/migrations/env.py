"""Alembic environment: runs the control-plane migrations on the configured URL."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context

from findata.accounts.tables import metadata as accounts_metadata
from findata.control_plane.schema import metadata as feed_metadata
from findata.webhooks.tables import metadata as webhooks_metadata

config = context.config


def run_migrations() -> None:
    """Migrate the database named by ``sqlalchemy.url`` (online: with a live connection)."""
    engine = sa.create_engine(config.get_main_option("sqlalchemy.url"), poolclass=sa.NullPool)
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            # one database, one migration history: every part's tables (for autogenerate)
            target_metadata=[feed_metadata, accounts_metadata, webhooks_metadata],
            render_as_batch=connection.dialect.name == "sqlite",
        )
        with context.begin_transaction():
            context.run_migrations()


run_migrations()
