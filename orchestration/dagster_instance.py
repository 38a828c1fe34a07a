"""The Dagster instance (runs, event logs, schedules) chosen by the settings alone.

``$FINDATA_HOME/dagster`` is always DAGSTER_HOME: its ``dagster.yaml`` is written from the
settings before Dagster starts (``findata refresh``, ``findata ui``). On the SQLite default the
instance's storage is SQLite in that folder. When the control plane is PostgreSQL
(``FINDATA_DATABASE_URL``), the instance is dagster-postgres in the same database, in a schema
of its own (``dagster``: Dagster's tables and its Alembic version table would otherwise sit
beside the control plane's), so every pipeline host and the UI share one instance.

The file names no secret: it reads the connection from the environment variable
``FINDATA_DAGSTER_POSTGRES_URL`` (dagster's ``env:`` indirection), which this module sets from
the control plane's URL for this process and the Dagster processes it starts.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import yaml

from findata.settings import Settings

#: the environment variable the generated dagster.yaml reads the PostgreSQL URL from
POSTGRES_URL_ENV = "FINDATA_DAGSTER_POSTGRES_URL"
#: the PostgreSQL schema of Dagster's tables, beside the control plane's (``public``)
DAGSTER_SCHEMA = "dagster"


def on_postgres(settings: Settings) -> bool:
    """True when the control plane, and so the Dagster instance, is PostgreSQL."""
    return sa.make_url(settings.control_plane_url).get_backend_name() == "postgresql"


def dagster_postgres_url(database_url: str) -> str:
    """The URL dagster-postgres connects with: the control plane's database through psycopg2
    (dagster-postgres drives its connections as psycopg2 ones; the control plane's
    ``+psycopg`` is psycopg 3), with Dagster's schema first on the search path."""
    url = sa.make_url(database_url)
    options = url.query.get("options")
    search_path = f"-csearch_path={DAGSTER_SCHEMA}"
    if isinstance(options, tuple):  # a parameter given twice: libpq reads the last
        options = options[-1]
    merged = f"{options} {search_path}" if options else search_path
    url = url.set(drivername="postgresql+psycopg2").update_query_dict({"options": merged})
    return url.render_as_string(hide_password=False)


def instance_config(settings: Settings) -> dict[str, Any]:
    """The instance's ``dagster.yaml`` as a mapping: telemetry off, storage by the settings."""
    if on_postgres(settings):
        storage: dict[str, Any] = {"postgres": {"postgres_url": {"env": POSTGRES_URL_ENV}}}
    else:
        # Dagster's SQLite files, with the event log on kept-open connections
        storage = {
            "custom": {
                "module": "findata.orchestration.dagster_sqlite_storage",
                "class": "KeptOpenSqliteStorage",
                "config": {"base_dir": str(settings.dagster_home)},
            }
        }
    return {"telemetry": {"enabled": False}, "storage": storage}


def _create_dagster_schema(settings: Settings) -> None:
    """Dagster's schema in the control plane's database (dagster-postgres creates its tables,
    not the schema they go in)."""
    from findata.control_plane.database import engine_for

    with engine_for(settings.control_plane_url).connect() as connection:
        exists = connection.scalar(
            sa.text("SELECT 1 FROM pg_namespace WHERE nspname = :name"),
            {"name": DAGSTER_SCHEMA},
        )
        if exists:
            return
        try:
            connection.execute(sa.text(f'CREATE SCHEMA IF NOT EXISTS "{DAGSTER_SCHEMA}"'))
            connection.commit()
        except sa.exc.IntegrityError:
            # another host created it at the same moment (IF NOT EXISTS does not cover a
            # concurrent creation): it exists, which is all that was needed
            connection.rollback()


def prepare_dagster_home(settings: Settings) -> Path:
    """``$FINDATA_HOME/dagster`` with the instance's ``dagster.yaml`` written from the
    settings, exported as DAGSTER_HOME (with the PostgreSQL URL the file names, on
    PostgreSQL) for this process and those it starts."""
    home = settings.dagster_home
    home.mkdir(parents=True, exist_ok=True)
    if on_postgres(settings):
        _create_dagster_schema(settings)
        os.environ[POSTGRES_URL_ENV] = dagster_postgres_url(settings.control_plane_url)
    text = (
        "# Written by findata from its settings before Dagster starts (orchestration/"
        "dagster_instance.py):\n# edits are replaced. The PostgreSQL URL, when used, comes from "
        f"{POSTGRES_URL_ENV}.\n" + yaml.safe_dump(instance_config(settings), sort_keys=False)
    )
    target = home / "dagster.yaml"
    if not target.exists() or target.read_text() != text:
        # whole or not at all: a Dagster process starting meanwhile reads the old or the new
        staging = home / f".dagster.yaml.{os.getpid()}"
        staging.write_text(text)
        os.replace(staging, target)
    os.environ["DAGSTER_HOME"] = str(home)
    return home
