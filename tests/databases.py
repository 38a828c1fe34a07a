"""Databases of a test's own: a fresh PostgreSQL database per use, engines disposed after."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa

from findata.control_plane.database import engine_for

POSTGRES_SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


@contextmanager
def disposing_cached_engine(url: str) -> Iterator[str]:
    """Yield ``url``; afterwards dispose the engine ``engine_for`` cached for it, if any."""
    cached_before = engine_for.cache_info().currsize
    try:
        yield url
    finally:
        # engine_for is functools.cache'd and has no "is it cached?" query: an engine was created
        # during the test only if the cache grew (then engine_for(url) returns the cached one)
        if engine_for.cache_info().currsize > cached_before:
            engine_for(url).dispose()


@contextmanager
def fresh_postgres_database() -> Iterator[str]:
    """A new empty database on the local PostgreSQL server, dropped (WITH FORCE) afterwards."""
    server = sa.create_engine(POSTGRES_SERVER, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)
    name = f"findata_test_{uuid.uuid4().hex[:12]}"
    with server.connect() as connection:
        connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        with disposing_cached_engine(POSTGRES_SERVER.rsplit("/", 1)[0] + f"/{name}") as url:
            yield url
    finally:
        with server.connect() as connection:
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        server.dispose()
