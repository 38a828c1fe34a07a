"""A dbt that has already imported itself: a refresh's dbt commands start without dbt's ~1.5 s
of imports.

Every ``dbt`` command is a new Python process that imports dbt (click, mashumaro's serialisers,
the adapter) before it reads a byte of the project: ~1.5 s of a one-day refresh whose models
take ~2.5 s, paid after Dagster and the definitions have imported in the refresh's process. So a
refresh starts, before it imports Dagster, a server (:func:`start_warm_dbt`) that imports dbt on
the other core, builds the JSON schemas every dbt command validates its project and profile
with (:func:`build_validation_schemas`: ~0.6 s more of each command), and waits. dagster-dbt
then runs ``findata-dbt`` (:func:`main`) as its dbt executable: a small client that hands its
arguments, environment, working folder and standard streams to the server, which forks a child
that already has dbt imported and runs the command there, as ``dbt`` would. The client
forwards SIGINT and SIGTERM to the child (dagster-dbt interrupts dbt so) and exits with its
status. dagster-dbt streams the child's output as it would dbt's: the child writes to the
client's own stdout.

Without a server of its parent process (``dagster dev``, the daemon, a test that runs the
client alone) the client replaces itself with the environment's ``dbt``: the same command,
~40 ms later. The server lives as long as the process that started it (its stdin is a pipe
from that process; the end of the pipe ends the server), listens on a socket in a folder only
its user can enter, and serves only that process's children.

Nothing here imports dbt outside the server, nor Dagster at all.
"""

from __future__ import annotations

import atexit
import importlib
import os
import socket
import subprocess
import sys
from pathlib import Path

from findata.orchestration import fork_server

#: ``<pid of the process that started the server>:<socket path>``
SERVER_ENV = "FINDATA_WARM_DBT"
DBT = Path(sys.executable).parent / "dbt"
CLIENT = Path(sys.executable).parent / "findata-dbt"
# what a dbt build imports before it reads the project (``python -X importtime``)
_PRELOADED = (
    "dbt.cli.main",
    "dbt.adapters.duckdb",
    "dbt.adapters.duckdb.connections",
    "dbt.adapters.duckdb.impl",
    "dbt.task.build",
    "dbt_common.clients.agate_helper",
)
# the classes whose JSON schema every dbt command builds, once per process, to validate what it
# reads (the project, its flags and packages, the profile; a build's test results): ~0.6-0.8 s
# of a one-day refresh's build, measured. ``json_schema`` is cached on the class (building it
# also compiles the serialisers its defaults need), so the server's children inherit them
# built. A parse validates its nodes too; those are left to the parse, the one command of a
# refresh that needs them (built here they would be work a build never uses)
VALIDATED = (
    "dbt.contracts.project:Project",
    "dbt.contracts.project:Configuration",
    "dbt.contracts.project:ProjectFlags",
    "dbt.contracts.project:PackageConfig",
    "dbt.contracts.project:ProfileConfig",
    "dbt.contracts.selection:SelectorFile",
    "dbt.adapters.duckdb.credentials:DuckDBCredentials",
    "dbt.task.test:TestResultData",
)

_server: subprocess.Popen[bytes] | None = None
_address: str | None = None  # the server's socket, known to this process and its forks


def start_warm_dbt() -> None:
    """Start this process's dbt server (once; importing dbt from now on, on another core) and
    point this process's children at it (``FINDATA_WARM_DBT``)."""
    global _server, _address
    if _address is not None and (_server is None or _server.poll() is None):
        # one server per process (the next refresh of a test run reuses it); in a fork of the
        # process that started it (no _server of its own), that process's
        return
    _server, path = fork_server.start_owned_server(
        "findata.orchestration.warm_dbt",
        "findata-dbt-",
        # dagster-dbt asks dbt for unbuffered output; the children inherit these streams' mode
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    _address = path
    os.environ[SERVER_ENV] = f"{os.getpid()}:{path}"
    atexit.register(stop_warm_dbt)


def inherit_warm_dbt() -> None:
    """In a child forked from a process that started a server (a warm refresh's child): the
    server serves this process's children too, and this process's end leaves it running (it
    belongs to the process it was forked from)."""
    global _server
    if _server is None or _address is None:
        return
    _server = None
    atexit.unregister(stop_warm_dbt)
    os.environ[SERVER_ENV] = f"{os.getpid()}:{_address}"


def stop_warm_dbt() -> None:
    """End this process's dbt server, if any (as its exit would: the server's stdin ends), and
    wait for it to remove its socket's folder. A process that goes on after its refreshes (the
    demo, serving) stops it rather than keep an idle dbt."""
    global _server, _address
    server, _server, _address = _server, None, None
    os.environ.pop(SERVER_ENV, None)
    if server is not None:
        fork_server.stop_owned_server(server)


def _connect() -> socket.socket | None:
    """A connection to the server of this process's parent; None when it has none."""
    owner, _, path = os.environ.get(SERVER_ENV, "").partition(":")
    # a server serves its own process's children: a refresh started by that process (a test's
    # `findata refresh`) has its own dbt, in its own process group, killed with it
    if not path or owner != str(os.getppid()):
        return None
    return fork_server.connect(path)


def main() -> None:
    """``findata-dbt ARGS``: run ``dbt ARGS`` in the warm server's child, or as ``dbt``."""
    args = sys.argv[1:]
    connection = _connect()
    if connection is not None:
        status = fork_server.run_in_server(connection, args)
        if status is not None:
            sys.exit(status)
    # no server, or it ended before it started the command (nothing ran: run it here)
    os.execv(DBT, [str(DBT), *args])


def serve(listener: socket.socket) -> None:
    """The server: import dbt (connections wait on ``listener`` meanwhile), then run each
    command in a forked child until stdin, the pipe from the process that started it, ends."""
    fork_server.serve_owned(listener, prepare_dbt, _run_dbt)


def prepare_dbt() -> None:
    """What the server does before it serves: import what a dbt build imports, and build the
    JSON schemas its commands validate with, so that every child it forks finds both done."""
    for module in _PRELOADED:
        __import__(module)
    build_validation_schemas()


def build_validation_schemas() -> None:
    """Build, in this process, the JSON schemas a dbt command validates its inputs with."""
    for name in VALIDATED:
        module, _, cls = name.partition(":")
        getattr(importlib.import_module(module), cls).json_schema()


def _run_dbt(request: fork_server.Request) -> None:
    """In the forked child: ``dbt ARGS``, as the client would have run it."""
    sys.argv = ["dbt", *request.args]
    from dbt.cli.main import cli

    cli(prog_name="dbt")


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])))
