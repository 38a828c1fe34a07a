"""The control-plane schema: migrations build exactly the tables of schema.py,
accounts/tables.py and webhooks/tables.py, on SQLite and on a real PostgreSQL server (a database
of its own per run)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from findata.accounts.tables import metadata as accounts_metadata
from findata.control_plane.database import alembic_config, engine_for, upgrade
from findata.control_plane.schema import metadata as control_metadata
from findata.webhooks.tables import metadata as webhooks_metadata

ACCOUNT_TABLES = set(accounts_metadata.tables)
WEBHOOK_TABLES = set(webhooks_metadata.tables)
#: the newest migration
HEAD = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
#: the tables of the first migration (0001)
FIRST_TABLES = {"versions", "change_records", "events"}
CONTROL_TABLES = FIRST_TABLES | {"account_notices"}


def _combined_metadata(only: set[str] | None = None) -> sa.MetaData:
    """Every table the migrations create (or just those named ``only``)."""
    combined = sa.MetaData()
    for source in (control_metadata, accounts_metadata, webhooks_metadata):
        for table in source.tables.values():
            if only is None or table.name in only:
                table.to_metadata(combined)
    return combined


def _differences(url: str, metadata: sa.MetaData) -> list[object]:
    engine = sa.create_engine(url, poolclass=sa.NullPool)
    with engine.connect() as connection:
        return compare_metadata(MigrationContext.configure(connection), metadata)


def _revision(url: str) -> str | None:
    engine = sa.create_engine(url, poolclass=sa.NullPool)
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def test_combined_metadata_holds_both_schemas() -> None:
    assert set(_combined_metadata().tables) == CONTROL_TABLES | ACCOUNT_TABLES | WEBHOOK_TABLES


def test_sqlite_migrations_match_the_schema(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'control.sqlite'}"
    upgrade(url)
    assert _differences(url, _combined_metadata()) == []


def test_postgresql_migrations_match_the_schema(postgres_url: str) -> None:
    upgrade(postgres_url)
    assert _differences(postgres_url, _combined_metadata()) == []


def test_engine_for_migrates_on_first_use(tmp_path: Path) -> None:
    engine = engine_for(f"sqlite:///{tmp_path / 'nested' / 'control.sqlite'}")
    assert set(sa.inspect(engine).get_table_names()) >= (
        CONTROL_TABLES | ACCOUNT_TABLES | WEBHOOK_TABLES
    )


def _downgrade_to_0001_and_back(url: str) -> None:
    upgrade(url)
    assert _revision(url) == HEAD
    engine = sa.create_engine(url, poolclass=sa.NullPool)
    with engine.begin() as connection:
        connection.execute(
            sa.text(
                "INSERT INTO versions (label, file_name, run_id, published_at, content_hash,"
                " data_through, row_counts) VALUES ('v1', 'v1.duckdb', 'run', "
                "'2026-11-22 00:00:00+00:00', 'abc', '{}', '{}')"
            )
        )

    command.downgrade(alembic_config(url), "0001")
    assert _revision(url) == "0001"
    tables = set(sa.inspect(engine).get_table_names())
    assert not tables & (ACCOUNT_TABLES | WEBHOOK_TABLES | {"account_notices"})
    assert tables >= FIRST_TABLES
    assert _differences(url, _combined_metadata(FIRST_TABLES)) == []

    upgrade(url)
    assert _revision(url) == HEAD
    assert _differences(url, _combined_metadata()) == []
    with engine.connect() as connection:
        # 0001's data outlives the round trip
        assert connection.execute(sa.text("SELECT label FROM versions")).scalars().all() == ["v1"]
    engine.dispose()


def test_sqlite_downgrade_to_0001_and_upgrade_again(tmp_path: Path) -> None:
    _downgrade_to_0001_and_back(f"sqlite:///{tmp_path / 'control.sqlite'}")


def test_postgresql_downgrade_to_0001_and_upgrade_again(postgres_url: str) -> None:
    _downgrade_to_0001_and_back(postgres_url)
