"""The control-plane schema: migrations build exactly the tables of schema.py, on SQLite and on a
real PostgreSQL server (a database of its own per run)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from findata.control_plane.database import engine_for, upgrade
from findata.control_plane.schema import metadata

POSTGRES_SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def _differences(url: str) -> list[object]:
    upgrade(url)
    engine = sa.create_engine(url, poolclass=sa.NullPool)
    with engine.connect() as connection:
        return compare_metadata(MigrationContext.configure(connection), metadata)


def test_sqlite_migrations_match_the_schema(tmp_path: Path) -> None:
    assert _differences(f"sqlite:///{tmp_path / 'control.sqlite'}") == []


def test_engine_for_migrates_on_first_use(tmp_path: Path) -> None:
    engine = engine_for(f"sqlite:///{tmp_path / 'nested' / 'control.sqlite'}")
    assert {"versions", "change_records", "events"} <= set(sa.inspect(engine).get_table_names())


@pytest.fixture
def postgres_url() -> Iterator[str]:
    server = sa.create_engine(POSTGRES_SERVER, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)
    name = f"findata_test_{uuid.uuid4().hex[:12]}"
    with server.connect() as connection:
        connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield POSTGRES_SERVER.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with server.connect() as connection:
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def test_postgresql_migrations_match_the_schema(postgres_url: str) -> None:
    assert _differences(postgres_url) == []
