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
import contextlib
import importlib
import json
import os
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

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
_LENGTH = struct.Struct("!I")
_PID = struct.Struct("!q")
_EXIT_CODE = struct.Struct("!i")

_server: subprocess.Popen[bytes] | None = None


def start_warm_dbt() -> None:
    """Start this process's dbt server (once; importing dbt from now on, on another core) and
    point this process's children at it (``FINDATA_WARM_DBT``)."""
    global _server
    if _server is not None and _server.poll() is None:
        return  # one server per process: the next refresh of a test run reuses it
    folder = tempfile.mkdtemp(prefix="findata-dbt-")  # 0700: only this user connects
    path = os.path.join(folder, "socket")
    # listening before the server starts: a command sent while it imports dbt waits for it
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    with listener:
        _server = subprocess.Popen(
            [sys.executable, "-m", "findata.orchestration.warm_dbt", str(listener.fileno())],
            pass_fds=(listener.fileno(),),
            stdin=subprocess.PIPE,  # never written: its end (this process's exit) ends the server
            stdout=subprocess.DEVNULL,
            # dagster-dbt asks dbt for unbuffered output; the children inherit these streams' mode
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    os.environ[SERVER_ENV] = f"{os.getpid()}:{path}"
    atexit.register(stop_warm_dbt)


def stop_warm_dbt() -> None:
    """End this process's dbt server, if any (as its exit would: the server's stdin ends), and
    wait for it to remove its socket's folder. A process that goes on after its refreshes (the
    demo, serving) stops it rather than keep an idle dbt."""
    global _server
    server, _server = _server, None
    os.environ.pop(SERVER_ENV, None)
    if server is None:
        return
    if server.stdin is not None:
        server.stdin.close()
    server.wait()


def _connect() -> socket.socket | None:
    """A connection to the server of this process's parent; None when it has none."""
    owner, _, path = os.environ.get(SERVER_ENV, "").partition(":")
    # a server serves its own process's children: a refresh started by that process (a test's
    # `findata refresh`) has its own dbt, in its own process group, killed with it
    if not path or owner != str(os.getppid()):
        return None
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(path)
    except OSError:
        connection.close()
        return None
    return connection


def main() -> None:
    """``findata-dbt ARGS``: run ``dbt ARGS`` in the warm server's child, or as ``dbt``."""
    args = sys.argv[1:]
    connection = _connect()
    if connection is not None:
        request = json.dumps({"args": args, "cwd": os.getcwd(), "env": dict(os.environ)})
        payload = request.encode()
        with connection:
            try:
                socket.send_fds(connection, [_LENGTH.pack(len(payload))], [0, 1, 2])
                connection.sendall(payload)
            except OSError:  # the server is ending
                status = None
            else:
                status = _receive_status(connection)
        if status is not None:
            sys.exit(status)
    # no server, or it ended before it started the command (nothing ran: run it here)
    os.execv(DBT, [str(DBT), *args])


def _receive_status(connection: socket.socket) -> int | None:
    """Forward interrupts to the child the server names, then its exit status; None when the
    server ended without starting one."""
    pid = _receive_exactly(connection, _PID.size)
    if pid is None:
        return None
    (child,) = _PID.unpack(pid)

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signum)

    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGTERM, forward)
    code = _receive_exactly(connection, _EXIT_CODE.size)
    # the server ended while the child ran: the command's fate is unknown, so it failed
    return _EXIT_CODE.unpack(code)[0] if code is not None else 1


def _receive_exactly(connection: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


#: the selector's mark on the server's stdin, the pipe from the process that started it
_OWNER = object()


def serve(listener: socket.socket) -> None:
    """The server: import dbt (connections wait on ``listener`` meanwhile), then run each
    request in a forked child until stdin ends. One thread throughout: a fork copies only the
    forking thread, so no lock is left held in a child."""
    # Ctrl-C reaches the whole process group: the client forwards it to the command's child
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    path = listener.getsockname()
    prepare_dbt()
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ, _OWNER)
    try:
        while True:
            for key, _ in selector.select():
                if key.fileobj is listener:
                    _accept(listener, selector)
                elif key.data is _OWNER:
                    if not os.read(sys.stdin.fileno(), 4096):
                        return
                else:
                    _report_exit(key, selector)
    finally:
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)


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


def _accept(listener: socket.socket, selector: selectors.BaseSelector) -> None:
    """Start the command of the next connection; its child's exit is watched through a pidfd
    (readable when the child exits: no timed wait, no thread)."""
    connection, _ = listener.accept()
    child = _start_command(connection, listener)
    if child is None:
        connection.close()
        return
    selector.register(os.pidfd_open(child), selectors.EVENT_READ, (child, connection))


def _report_exit(key: selectors.SelectorKey, selector: selectors.BaseSelector) -> None:
    """A child exited: send its exit code to its client."""
    child, connection = key.data
    selector.unregister(key.fd)
    os.close(key.fd)
    _, status = os.waitpid(child, 0)
    with contextlib.suppress(OSError):  # the client is gone (killed): no one to tell
        connection.sendall(_EXIT_CODE.pack(os.waitstatus_to_exitcode(status)))
    connection.close()


def _start_command(connection: socket.socket, listener: socket.socket) -> int | None:
    """Read one request and fork its child; the child's pid, sent to the client too."""
    try:
        header, fds, _, _ = socket.recv_fds(connection, _LENGTH.size, 3)
    except OSError:
        return None
    payload = None
    if len(header) == _LENGTH.size and len(fds) == 3:
        with contextlib.suppress(OSError):
            payload = _receive_exactly(connection, _LENGTH.unpack(header)[0])
    if payload is None:  # a client that ended mid-request: its streams are not kept
        for fd in fds:
            os.close(fd)
        return None
    request = json.loads(payload)
    child = os.fork()
    if child == 0:
        listener.close()
        connection.close()
        _run_command(request, fds)
    # the child holds the client's streams now: dagster-dbt reads to the end of dbt's stdout,
    # which comes when the child's copies and the client's close, not this process's
    for fd in fds:
        os.close(fd)
    try:
        connection.sendall(_PID.pack(child))
    except OSError:  # the client is gone: so is whoever would read the command's output
        os.kill(child, signal.SIGTERM)
    return child


def _run_command(request: dict[str, object], fds: list[int]) -> None:
    """In the forked child: become ``dbt ARGS`` run from the client's folder, environment and
    streams; never returns."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(str(request["cwd"]))
        os.environ.clear()
        os.environ.update(request["env"])  # type: ignore[arg-type]
        sys.argv = ["dbt", *request["args"]]  # type: ignore[misc]
        from dbt.cli.main import cli

        cli(prog_name="dbt")
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        # what the interpreter's exit would run (dbt's and multiprocessing's atexit functions)
        # and then nothing of the server's: os._exit, not an exception up the server's stack
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])))
