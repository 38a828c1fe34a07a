"""Contract checks from a process that has Great Expectations imported already: a warm
refresh's checks start without GE's seconds of imports.

A refresh checks its marts in worker processes forked from a helper that imported GE
(``workers.py``). A refresh in its own process spawns that helper as its dbt step starts, and it
imports GE beside dbt (~5 s of CPU on the other core). A warm refresh server
(``warm_refresh.py``) starts a checks server instead (:func:`start_warm_checks`): it imports GE
once, beside the refresh server's own imports, then forks a helper for each batch of marts a
refresh sends (:func:`check_in_warm_server`), which checks them in workers forked from it as
the spawned helper would. The protocol is ``fork_server.py``'s; the batch and its outcomes
travel as pickle files in a folder only this user can enter.

The server serves the process that started it and that process's forks (the refresh server's
children), and lives as long as that process (its stdin is a pipe from it).
"""

from __future__ import annotations

import atexit
import datetime as dt
import gc
import pickle
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from findata.orchestration import fork_server
from findata.orchestration.checks.workers import (
    MartCheck,
    MartCheckOutcome,
    check_in_workers,
)

_server: subprocess.Popen[bytes] | None = None
_address: str | None = None  # the server's socket, known to this process and its forks


def start_warm_checks() -> None:
    """Start this process's checks server (once; it imports GE from now on, in its own
    process). This process and its forks then send it their batches."""
    global _server, _address
    if _server is not None and _server.poll() is None:
        return
    _server, path = fork_server.start_owned_server(
        "findata.orchestration.checks.warm_checks", "findata-checks-"
    )
    _address = path
    atexit.register(stop_warm_checks)


def stop_warm_checks() -> None:
    """End this process's checks server, if it started one, and wait for it."""
    global _server, _address
    server, _server, _address = _server, None, None
    if server is not None:
        fork_server.stop_owned_server(server)


def inherit_warm_checks() -> None:
    """In a child forked from the process that started the server (a warm refresh's child):
    send it this process's batches too, and leave it running at this process's end."""
    global _server
    if _server is not None:
        _server = None
        atexit.unregister(stop_warm_checks)


def has_warm_checks() -> bool:
    """Whether this process sends its batches to a checks server."""
    return _address is not None


def check_in_warm_server(
    jobs: list[MartCheck], now: dt.datetime | None
) -> list[MartCheckOutcome] | None:
    """``jobs`` checked by a helper the checks server forks, on the clock ``now`` (None: the
    system's), their outcomes in order; None when this process has no server, or it ended
    before it took the batch (nothing was checked). A check that raises raises here."""
    connection = None if _address is None else fork_server.connect(_address)
    if connection is None:
        return None
    with tempfile.TemporaryDirectory(prefix="findata-checks-") as folder:
        batch, outcomes = Path(folder) / "batch.pickle", Path(folder) / "outcomes.pickle"
        batch.write_bytes(pickle.dumps((jobs, now)))
        # the refresh's own handlers stay: an interrupt stops the refresh, whose end (its
        # connection closed) the server answers by killing the batch's helper
        status = fork_server.run_in_server(
            connection, [str(batch), str(outcomes)], forward_signals=False
        )
        if status is None:
            return None
        if not outcomes.exists():
            raise RuntimeError(f"the contract checks' helper ended ({status}) with no outcome")
        kind, value = pickle.loads(outcomes.read_bytes())
    if kind == "error":
        raise value
    return value


def _check_batch(request: fork_server.Request) -> None:
    """In the server's child: check the batch of ``request``'s first file into its second."""
    batch, outcomes = (Path(arg) for arg in request.args)
    jobs, now = pickle.loads(batch.read_bytes())
    try:
        result: tuple[str, object] = ("ok", check_in_workers(jobs, now))
    except Exception as error:  # raised again in the refresh, as the spawned helper's would be
        result = ("error", error)
    try:
        data = pickle.dumps(result)
    except Exception:  # an error that does not pickle: its text does
        data = pickle.dumps(("error", RuntimeError(repr(result[1]))))
    outcomes.write_bytes(data)


def serve(listener: socket.socket) -> None:
    """The server: import GE (connections wait meanwhile), then check each batch in a forked
    helper until stdin ends. It imports at the usual priority, unlike a refresh's own helper
    (``workers.HELPER_NICENESS``): beside the refresh server's imports, not beside dbt, and
    soon done, so that a refresh sent to a server that is ready finds GE imported."""
    fork_server.serve_owned(listener, _prepare, _check_batch)


def _prepare() -> None:
    from findata.orchestration.checks.gx_runtime import import_gx

    import_gx()
    gc.freeze()  # the helpers share these pages rather than copy them as they collect


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])))
