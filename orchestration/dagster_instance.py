"""The Dagster instance (runs, event logs, schedules) chosen by the settings alone.

``$FINDATA_HOME/dagster`` is always DAGSTER_HOME: its ``dagster.yaml`` is written before Dagster
starts (``findata refresh``, ``findata ui``) from the project's template, ``dagster.yaml`` at the
repository root (in the package as ``findata/dagster.yaml``, a link to it in a checkout and a
copy in a wheel), with the storage the settings choose. On the SQLite default that is Dagster's
own default: SQLite files in DAGSTER_HOME. When the control plane is PostgreSQL
(``FINDATA_DATABASE_URL``), the instance is dagster-postgres in the same database, in a schema
of its own (``dagster``: Dagster's tables and its Alembic version table would otherwise sit
beside the control plane's), so every pipeline host and the UI share one instance.

The file names no secret: it reads the connection from the environment variable
``FINDATA_DAGSTER_POSTGRES_URL`` (dagster's ``env:`` indirection), which this module sets from
the control plane's URL for this process and the Dagster processes it starts.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import yaml

from findata.settings import Settings

#: the environment variable the generated dagster.yaml reads the PostgreSQL URL from
POSTGRES_URL_ENV = "FINDATA_DAGSTER_POSTGRES_URL"
#: the instance template: the repository's dagster.yaml, in the package as findata/dagster.yaml
TEMPLATE = "dagster.yaml"
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


def instance_template() -> str:
    """The text of the project's ``dagster.yaml`` (the instance template)."""
    return resources.files("findata").joinpath(TEMPLATE).read_text()


def instance_config(settings: Settings) -> dict[str, Any]:
    """The instance's ``dagster.yaml`` as a mapping: the template, with PostgreSQL storage when
    the control plane is PostgreSQL (else Dagster's default, SQLite in DAGSTER_HOME)."""
    config: dict[str, Any] = yaml.safe_load(instance_template()) or {}
    if on_postgres(settings):
        config["storage"] = {"postgres": {"postgres_url": {"env": POSTGRES_URL_ENV}}}
    return config


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
        f"# Written by findata from {TEMPLATE} and its settings before Dagster starts "
        "(orchestration/\n# dagster_instance.py): edits here are replaced. The PostgreSQL URL, "
        f"when used, comes from {POSTGRES_URL_ENV}.\n"
        + yaml.safe_dump(instance_config(settings), sort_keys=False)
    )
    target = home / "dagster.yaml"
    if not target.exists() or target.read_text() != text:
        # whole or not at all: a Dagster process starting meanwhile reads the old or the new
        staging = home / f".dagster.yaml.{os.getpid()}"
        staging.write_text(text)
        os.replace(staging, target)
    os.environ["DAGSTER_HOME"] = str(home)
    return home
