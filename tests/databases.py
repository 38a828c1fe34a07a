"""Databases of a test's own: a fresh PostgreSQL database per use, engines disposed after; a
private PostgreSQL server a test may restart."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa

from findata.control_plane.database import ControlPlaneNotUpgraded, engine_for, upgrade

POSTGRES_SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def upgraded(url: str) -> str:
    """``url``, its control plane migrated to the newest schema as `findata db upgrade` does
    (every command but that one, ``serve`` and ``demo`` refuses a database never migrated)."""
    upgrade(url)
    return url


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
            # a database never migrated had no engine cached (the cache grew by another's)
            with contextlib.suppress(ControlPlaneNotUpgraded):
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


#: settings of a private cluster: small, loopback only, durability off (a test's throwaway)
PRIVATE_CLUSTER_SETTINGS = """
listen_addresses = '127.0.0.1'
max_connections = 100
shared_buffers = 16MB
fsync = off
synchronous_commit = off
full_page_writes = off
"""


@dataclass
class PrivatePostgres:
    """A PostgreSQL server of a test's own (the shared one on 5432 is never restarted)."""

    bin_dir: Path
    directory: Path
    port: int
    url: str  # a database created for the test

    def restart(self) -> None:
        """Stop the server as an operator's restart does (fast: sessions are ended, not
        waited for) and start it again; returns once it accepts connections."""
        self.pg_ctl("restart", "-m", "fast")

    def pg_ctl(self, *arguments: str) -> None:
        data, log = str(self.directory / "data"), str(self.directory / "server.log")
        _run_as_postgres(self.bin_dir / "pg_ctl", "-D", data, "-l", log, "-w", *arguments)


def _postgres_bin_dir() -> Path:
    """The newest PostgreSQL server binaries, or a failure saying what to install."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_major_version)
    if not found:
        pytest.fail(
            "no PostgreSQL server binaries (/usr/lib/postgresql/*/bin/initdb): this test runs a "
            "private PostgreSQL server; install Debian's postgresql package (.ci/run does)"
        )
    return Path(found[-1]).parent


def _major_version(initdb: str) -> int:
    version = Path(initdb).parent.parent.name
    return int(version) if version.isdigit() else 0


def _run_as_postgres(*command: str | Path) -> None:
    """Run a server binary; as root, as the ``postgres`` user (initdb and postgres refuse
    root)."""
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    done = subprocess.run(
        [*as_user, *map(str, command)],
        cwd=tempfile.gettempdir(),  # a directory the postgres user may enter
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} failed ({done.returncode}): {done.stdout}{done.stderr}")


def _loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A new PostgreSQL cluster (initdb in a temporary directory, trust authentication) served
    on a free loopback port, with one empty database; stopped and removed afterwards."""
    bin_dir = _postgres_bin_dir()
    directory = Path(tempfile.mkdtemp(prefix="findata-pg-"))
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres", "postgres")
    data, port = directory / "data", _loopback_port()
    # a new database name per run: the Redis counters' namespace is never an earlier run's
    name = f"findata_test_{uuid.uuid4().hex[:12]}"
    server = PrivatePostgres(
        bin_dir, directory, port, f"postgresql+psycopg://postgres@127.0.0.1:{port}/{name}"
    )
    try:
        initdb = ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"]
        _run_as_postgres(bin_dir / "initdb", *initdb, "--locale=C")
        with (data / "postgresql.conf").open("a") as conf:
            conf.write(PRIVATE_CLUSTER_SETTINGS)
            conf.write(f"port = {port}\nunix_socket_directories = '{directory}'\n")
        server.pg_ctl("start")
        admin = sa.create_engine(
            server.url.rsplit("/", 1)[0] + "/postgres",
            isolation_level="AUTOCOMMIT",
            poolclass=sa.NullPool,
        )
        with admin.connect() as connection:
            connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
        with disposing_cached_engine(server.url):
            yield server
    finally:
        if (data / "postmaster.pid").exists():
            server.pg_ctl("stop", "-m", "immediate")
        shutil.rmtree(directory, ignore_errors=True)
