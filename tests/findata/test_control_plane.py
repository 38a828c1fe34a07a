"""The control-plane schema: migrations build exactly the tables of schema.py,
accounts/tables.py and webhooks/tables.py, on SQLite and on a real PostgreSQL server (a database
of its own per run); they run when asked (`findata db upgrade`, idempotent), and opening a
database that is not at the newest migration is refused with the message saying what to run,
never migrates it."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from findata.accounts.tables import metadata as accounts_metadata
from findata.control_plane import database
from findata.control_plane.database import (
    ControlPlaneNotUpgraded,
    alembic_config,
    engine_for,
    upgrade,
)
from findata.control_plane.schema import metadata as control_metadata
from findata.webhooks.tables import metadata as webhooks_metadata
from tests.findata.cli_runner import Cli

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


def test_the_head_that_opening_checks_for_is_alembics() -> None:
    """``engine_for`` checks for ``HEAD`` without importing Alembic: a new migration moves it."""
    assert database.HEAD == HEAD


def _tables(url: str) -> set[str]:
    engine = sa.create_engine(url, poolclass=sa.NullPool)
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_opening_a_database_never_migrated_is_refused_and_changes_nothing(
    control_plane_url: str,
) -> None:
    with pytest.raises(ControlPlaneNotUpgraded) as refused:
        engine_for(control_plane_url)
    assert "has no findata schema yet: run `findata db upgrade` first" in str(refused.value)
    if control_plane_url.startswith("sqlite"):  # no empty file made where the database will be
        assert not Path(sa.make_url(control_plane_url).database or "").exists()
    else:
        assert _tables(control_plane_url) == set()
    upgrade(control_plane_url)  # nothing of the refusal is kept: opened once migrated
    assert set(sa.inspect(engine_for(control_plane_url)).get_table_names()) >= (
        CONTROL_TABLES | ACCOUNT_TABLES | WEBHOOK_TABLES
    )


def test_a_database_behind_is_refused_naming_both_migrations(control_plane_url: str) -> None:
    upgrade(control_plane_url)
    command.downgrade(alembic_config(control_plane_url), "0005")
    with pytest.raises(ControlPlaneNotUpgraded) as refused:
        engine_for(control_plane_url)
    assert f"is at migration 0005, and this findata needs {HEAD}: run `findata db upgrade`" in (
        str(refused.value)
    )
    assert _revision(control_plane_url) == "0005"  # opening did not migrate it


def test_a_database_migrated_by_a_newer_findata_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'control.sqlite'}"
    upgrade(url)
    engine = sa.create_engine(url, poolclass=sa.NullPool)
    with engine.begin() as connection:
        connection.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    with pytest.raises(ControlPlaneNotUpgraded, match="at migration 9999, which this findata"):
        engine_for(url)


def test_db_upgrade_brings_a_new_database_to_the_newest_schema_and_again_changes_nothing(
    control_plane_url: str, tmp_path: Path
) -> None:
    database_url = None if control_plane_url.startswith("sqlite") else control_plane_url
    cli = Cli(tmp_path / "home", database_url)  # SQLite: the home's default database
    first = cli.run("db", "upgrade")
    assert first.returncode == 0 and "is at the newest schema" in first.stdout, first.stderr
    assert _revision(cli.url) == HEAD
    assert _differences(cli.url, _combined_metadata()) == []
    accounts = cli.json("accounts", "create", "--email", "kept@example.com", "--plan", "pro")
    again = cli.run("db", "upgrade")
    assert again.returncode == 0 and "is at the newest schema" in again.stdout, again.stderr
    assert _revision(cli.url) == HEAD
    assert _differences(cli.url, _combined_metadata()) == []
    listed = cli.run("keys", "list", "--account", str(accounts["account_id"]))
    assert listed.returncode == 0 and listed.stdout.strip() == "[]"  # the account is still there


@pytest.mark.parametrize(
    "command",
    [
        ("accounts", "create", "--email", "a@example.com", "--plan", "pro"),
        ("webhooks", "list", "--account", "acct_x"),
        ("ui", "--port", "1"),
    ],
    ids=lambda args: args[0],
)
def test_a_command_on_a_database_never_migrated_says_run_db_upgrade(
    command: tuple[str, ...], tmp_path: Path
) -> None:
    """One line naming the command to run (in FINDATA_LOG_FORMAT), no traceback, exit 1; the
    home gets no database file."""
    cli = Cli(tmp_path / "home", None)
    refused = cli.run(*command)
    assert refused.returncode == 1 and refused.stdout == ""
    (line,) = refused.stderr.strip().splitlines()
    assert "ControlPlaneNotUpgraded" in line and "run `findata db upgrade` first" in line, line
    assert not (tmp_path / "home" / "control.sqlite").exists()


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
