"""A refresh process kept warm between refreshes: ``findata refresh`` without its imports.

Before a refresh's run reads a byte, its process has spent seconds importing Python, Dagster
and the definitions (~3.5 s of a small one-day refresh's ~13 s here), its dbt server as long
again on the other core, and its checks' helper Great Expectations (~5 s of CPU beside dbt).
With ``FINDATA_WARM_REFRESH_IDLE_SECONDS`` set, ``findata refresh`` hands itself
(:func:`refresh_in_warm_server`) to a refresh server of its home, started by the first refresh
that finds none. The server imports Dagster and the definitions, and starts its warm dbt and
checks servers (``warm_dbt.py``, ``checks/warm_checks.py``), once; then it forks a child per
refresh (``fork_server.py``) that runs the command as the client would have: its arguments,
standard streams, folder and environment, its exit status. Killing the client kills its
refresh's process group, as killing a refresh's own process group would.

A server serves one home, one set of settings and one version of the code: its address is a
digest of them (:func:`server_address`), so a refresh with other settings, or after the code
changed, has a server of its own. A server ends once no refresh has run for that many seconds,
or on SIGTERM (it stops listening at once, waits for the refreshes it runs, then stops its dbt
and checks servers). Its socket is in a folder only its user can enter.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from findata.orchestration import fork_server
from findata.orchestration.build_inputs import code_fingerprint
from findata.settings import Settings

FINDATA = Path(sys.executable).parent / "findata"
#: the environment a refresh reads besides its arguments: a server serves only clients whose
#: values of these equal its own (its imports read them)
SERVED_ENVIRONMENT = ("FINDATA_", "DAGSTER_", "DBT_", "FAKETIME", "LD_PRELOAD", "TZ", "PYTHON")

_in_child = False


def server_address(settings: Settings) -> Path:
    """The socket of the refresh server for ``settings``' home, its environment (the variables
    of ``SERVED_ENVIRONMENT``), this Python environment and this code."""
    digest = hashlib.sha256()
    for part in (code_fingerprint()[0], sys.prefix, str(settings.home_dir.resolve())):
        digest.update(part.encode() + b"\0")
    for name in sorted(os.environ):
        if name.startswith(SERVED_ENVIRONMENT):
            digest.update(f"{name}={os.environ[name]}\0".encode())
    return _runtime_folder() / f"refresh-{digest.hexdigest()[:32]}.sock"


def _runtime_folder() -> Path:
    """``$TMPDIR/findata-<uid>``, entered by this user alone (PermissionError when another
    user made it, or it is open to others)."""
    folder = Path(tempfile.gettempdir()) / f"findata-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    status = folder.lstat()
    if status.st_uid != os.getuid() or status.st_mode & 0o077 or folder.is_symlink():
        raise PermissionError(f"{folder} is not this user's alone")
    return folder


def refresh_in_warm_server(
    settings: Settings, args: list[str], worth_starting: Callable[[], bool]
) -> int | None:
    """Run ``findata ARGS`` (a refresh) in a child of the warm refresh server of ``settings``;
    the child's exit status, or None when no server took it (nothing ran: the caller
    refreshes in its own process). When none runs, one is started if ``worth_starting()``
    (an unchanged refresh, said at once, is not worth the server's seconds of imports)."""
    try:
        path = server_address(settings)
        with _address_lock(path):
            connection = fork_server.connect(str(path))
            if connection is None and worth_starting():
                _start_at(settings, path, detached=True)
                connection = fork_server.connect(str(path))
    except OSError:
        return None
    if connection is None:
        return None
    return fork_server.run_in_server(connection, args)


def start_warm_refresh(settings: Settings, *, detached: bool = True) -> subprocess.Popen[bytes]:
    """Start the refresh server of ``settings`` (the caller makes sure none runs).
    ``detached``: in a session of its own, outliving this process (a benchmark keeps it
    attached, to wait for it and count its memory)."""
    path = server_address(settings)
    with _address_lock(path):
        return _start_at(settings, path, detached=detached)


def _start_at(settings: Settings, path: Path, *, detached: bool) -> subprocess.Popen[bytes]:
    """The server listening at ``path``, its socket bound here first: a refresh sent while it
    imports waits for it. The caller holds the address's lock."""
    path.unlink(missing_ok=True)  # a server that ended without removing it (killed)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    with listener:
        return subprocess.Popen(
            [
                str(FINDATA),
                "warm-refresh-server",
                str(listener.fileno()),
                str(settings.warm_refresh_idle_seconds),
            ],
            pass_fds=(listener.fileno(),),
            start_new_session=detached,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )


@contextlib.contextmanager
def _address_lock(path: Path) -> Iterator[None]:
    """Held while a client connects or starts a server, and while a server stops listening:
    no client starts a second server at one address, nor connects to one that is ending."""
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def in_warm_child() -> bool:
    """Whether this process is a refresh server's child (it runs its refresh itself)."""
    return _in_child


def serve_refreshes(
    listener: socket.socket,
    idle_seconds: float,
    run_command: Callable[[fork_server.Request], None],
) -> None:
    """The server: import what a refresh imports, then run each client's command as
    ``run_command(request)`` in a forked child until idle for ``idle_seconds`` or SIGTERM."""
    from findata.orchestration.checks.warm_checks import start_warm_checks, stop_warm_checks
    from findata.orchestration.refresh import prepare_refresh_process
    from findata.orchestration.warm_dbt import start_warm_dbt, stop_warm_dbt
    from findata.settings import get_settings

    # a terminal's Ctrl-C reaches its clients alone, which forward it to their child
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stop_listening = _listening_stopper(listener)
    # dbt and Great Expectations import in their servers while Dagster imports here
    start_warm_dbt()
    start_warm_checks()
    try:
        # frozen out of the collector's way there: the children share these pages rather
        # than copy them as they collect
        prepare_refresh_process(get_settings())
        fork_server.serve(
            listener,
            lambda request: _run_in_child(request, run_command),
            idle_seconds=idle_seconds,
            own_group=True,
            stop_signal=signal.SIGTERM,
            on_stop=stop_listening,
        )
    finally:
        stop_listening()
        stop_warm_dbt()
        stop_warm_checks()


def _listening_stopper(listener: socket.socket) -> Callable[[], None]:
    """What ends the server's listening, at once and once: its socket unlinked (if it is still
    the one it was started on) and closed, under the address's lock. From then on a refresh
    finds no server here and starts one, even while this one's last refreshes run; a client
    that connected just before is refused (it refreshes in its own process)."""
    path = Path(listener.getsockname())
    own_socket = path.stat().st_ino
    stopped = False

    def stop_listening() -> None:
        nonlocal stopped
        if stopped:
            return
        stopped = True
        with _address_lock(path):
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_ino == own_socket:
                    path.unlink()
            listener.close()

    return stop_listening


def _run_in_child(
    request: fork_server.Request, run_command: Callable[[fork_server.Request], None]
) -> None:
    """In a forked child: its dbt and checks servers are the server's; then the command."""
    global _in_child
    from findata.orchestration.checks.warm_checks import inherit_warm_checks
    from findata.orchestration.warm_dbt import inherit_warm_dbt

    _in_child = True
    inherit_warm_dbt()
    inherit_warm_checks()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    run_command(request)
