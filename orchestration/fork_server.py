"""A process that has imported what a command needs and forks a child per command.

A pipeline command (a dbt build, a refresh) spends seconds importing its libraries before it
reads a byte of data. A fork server imports them once; for each client that connects it forks a
child that has them already, and the child runs the command as the client would have:

- The client (:func:`run_in_server`) sends its standard streams (``SCM_RIGHTS``) and a JSON
  request: its arguments, working folder and environment.
- The server answers with the child's pid, then, once the child has exited, its exit status.
  The client forwards SIGINT and SIGTERM to the child and exits with that status.
- Each child runs in a process group of its own. When its client ends first (killed), the
  server kills that group: the command dies with whoever ran it, as it would have in the
  client's own process group.

One thread throughout, and the child's exit is watched through a pidfd (no timed wait): a fork
copies only the forking thread, so no lock is left held in a child.
"""

from __future__ import annotations

import atexit
import contextlib
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
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

_LENGTH = struct.Struct("!I")
_PID = struct.Struct("!q")
_EXIT_CODE = struct.Struct("!i")


@dataclass(frozen=True)
class Request:
    """What a client asks a child to run: arguments, working folder, environment."""

    args: list[str]
    cwd: str
    env: dict[str, str]


def start_owned_server(
    module: str, prefix: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``python -m MODULE FD``, a server listening on the socket ``FD``, and its socket's
    path: in a new folder named ``prefix…`` that only this user can enter, bound before the
    server starts (a command sent while it imports waits for it). It lives as long as this
    process: its stdin is a pipe from this process, never written, whose end ends it
    (:func:`stop_owned_server`, or this process's exit)."""
    folder = tempfile.mkdtemp(prefix=prefix)  # 0700: only this user connects
    path = os.path.join(folder, "socket")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    with listener:
        server = subprocess.Popen(
            [sys.executable, "-m", module, str(listener.fileno())],
            pass_fds=(listener.fileno(),),
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env=env,
        )
    return server, path


def serve_owned(
    listener: socket.socket, prepare: Callable[[], None], run_command: Callable[[Request], None]
) -> None:
    """The server :func:`start_owned_server` started: ``prepare()`` (its imports; connections
    wait on ``listener`` meanwhile), then :func:`serve` until stdin, the pipe from the process
    that started it, ends; then its socket's folder is removed. It ignores SIGINT throughout:
    a terminal's Ctrl-C reaches its owner's whole process group, and a client forwards it to
    its command's child."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    path = listener.getsockname()
    try:
        prepare()
        serve(listener, run_command, owner=sys.stdin.fileno())
    finally:
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)


def stop_owned_server(server: subprocess.Popen[bytes]) -> None:
    """End a server :func:`start_owned_server` started (its stdin ends) and wait for it."""
    if server.stdin is not None:
        server.stdin.close()
    server.wait()


def connect(path: str) -> socket.socket | None:
    """A connection to the server listening at ``path``; None when none listens there."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(path)
    except OSError:
        connection.close()
        return None
    return connection


def run_in_server(
    connection: socket.socket, args: list[str], *, forward_signals: bool = True
) -> int | None:
    """Run ``args`` in a child of the server at the other end of ``connection``, with this
    process's standard streams, folder and environment; the child's exit status, or None when
    the server ended before it started the command (nothing ran). ``forward_signals``: this
    process's SIGINT and SIGTERM go to the child from then on (a command-line client's)."""
    payload = json.dumps({"args": args, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    with connection:
        try:
            socket.send_fds(connection, [_LENGTH.pack(len(payload))], [0, 1, 2])
            connection.sendall(payload)
        except OSError:  # the server is ending
            return None
        return _receive_status(connection, forward_signals)


def _receive_status(connection: socket.socket, forward_signals: bool) -> int | None:
    """Forward interrupts to the child the server names, then its exit status; None when the
    server ended without starting one."""
    # None also when reset: the server closed its listener with this connection queued
    pid = _receive_exactly(connection, _PID.size)
    if pid is None:
        return None
    (child,) = _PID.unpack(pid)

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signum)

    if forward_signals:
        signal.signal(signal.SIGINT, forward)
        signal.signal(signal.SIGTERM, forward)
    code = _receive_exactly(connection, _EXIT_CODE.size)
    # the server ended while the child ran: the command's fate is unknown, so it failed
    return _EXIT_CODE.unpack(code)[0] if code is not None else 1


def _receive_exactly(connection: socket.socket, size: int) -> bytes | None:
    """``size`` bytes from ``connection``; None when it ends (or is reset) first."""
    data = b""
    while len(data) < size:
        try:
            chunk = connection.recv(size - len(data))
        except OSError:
            return None
        if not chunk:
            return None
        data += chunk
    return data


@dataclass(frozen=True)
class _Exited:
    """The selector's mark on a child's pidfd."""

    child: int
    connection: socket.socket


@dataclass(frozen=True)
class _ClientGone:
    """The selector's mark on a child's client connection (readable: the client ended)."""

    child: int


#: the selector's marks on the pipe from the process that started the server, and on the
#: socket a stop signal wakes
_OWNER = object()
_STOP = object()
_WAKE_SOCKETS: list[socket.socket] = []


def serve(
    listener: socket.socket,
    run_command: Callable[[Request], None],
    *,
    owner: int | None = None,
    idle_seconds: float | None = None,
    own_group: bool = False,
    stop_signal: signal.Signals | None = None,
    on_stop: Callable[[], None] | None = None,
) -> None:
    """Serve connections on ``listener`` until the pipe ``owner`` ends, or, with
    ``idle_seconds``, once no child has run for that long. Each command runs in a forked child
    as ``run_command(request)``, with the client's streams, folder and environment; its exit
    status is the ``SystemExit`` it raises (1 for any other exception).

    ``own_group``: each child leads a process group of its own, killed whole when its client
    ends first (a server in a session of its own, whose children start processes). Otherwise
    a child stays in the server's group, killed with it (a server in its owner's group).
    ``stop_signal``: on it, accept no more commands and return once the running ones ended;
    ``on_stop()`` is called then, before they end: the caller stops listening, so that a client
    is refused at once rather than queued for a server that will not take it.
    """
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    if owner is not None:
        selector.register(owner, selectors.EVENT_READ, _OWNER)
    if stop_signal is not None:
        selector.register(_wake_on(stop_signal), selectors.EVENT_READ, _STOP)
    running: set[int] = set()
    idle_since = time.monotonic()
    stopping = False
    while not (stopping and not running):
        timeout = None
        if idle_seconds is not None and not running:
            timeout = max(0.0, idle_since + idle_seconds - time.monotonic())
        events = selector.select(timeout)
        if not events and not running and timeout is not None:
            return  # idle for idle_seconds
        for key, _ in events:
            if key.fileobj is listener:
                if stopping:  # reported in the batch that stopped it: it may be closed
                    continue
                connection, _ = listener.accept()
                child = _start_command(connection, listener, run_command, own_group)
                if child is None:
                    connection.close()
                    continue
                running.add(child)
                exited = _Exited(child, connection)
                selector.register(os.pidfd_open(child), selectors.EVENT_READ, exited)
                selector.register(connection, selectors.EVENT_READ, _ClientGone(child))
            elif key.data is _OWNER:
                if not os.read(owner, 4096):  # type: ignore[arg-type]
                    return
            elif key.data is _STOP:
                key.fileobj.recv(64)  # type: ignore[union-attr]
                if not stopping:
                    stopping = True
                    selector.unregister(listener)
                    if on_stop is not None:
                        on_stop()
            elif isinstance(key.data, _ClientGone):
                # not a child whose exit this batch of events reported already: its pid, reaped,
                # may be another process's by now
                if key.data.child in running:
                    _kill_when_client_gone(key, selector, own_group)
            else:
                _report_exit(key, selector)
                running.discard(key.data.child)
                idle_since = time.monotonic()


def _wake_on(signum: signal.Signals) -> socket.socket:
    """A socket readable once ``signum`` arrived (Python's wakeup fd: no handler runs amid the
    server's work)."""
    readable, writable = socket.socketpair()
    readable.setblocking(False)
    writable.setblocking(False)
    signal.set_wakeup_fd(writable.fileno())
    signal.signal(signum, lambda _signum, _frame: None)
    # the socket lives as long as the process: the wakeup fd stays valid
    _WAKE_SOCKETS.append(writable)
    return readable


def _kill_when_client_gone(
    key: selectors.SelectorKey, selector: selectors.BaseSelector, own_group: bool
) -> None:
    """A client connection became readable: a client sends nothing after its request, so it
    ended (killed, or its process ended otherwise). Its command goes with it."""
    connection: socket.socket = key.fileobj  # type: ignore[assignment]
    selector.unregister(connection)
    try:
        data = connection.recv(1, socket.MSG_PEEK)
    except OSError:
        data = b""
    if not data:
        _kill_command(key.data.child, own_group)


def _kill_command(child: int, own_group: bool) -> None:
    """SIGKILL to a command: its process group, or the child alone when it shares the
    server's."""
    with contextlib.suppress(ProcessLookupError):
        if own_group:
            os.killpg(child, signal.SIGKILL)
        else:
            os.kill(child, signal.SIGKILL)


def _report_exit(key: selectors.SelectorKey, selector: selectors.BaseSelector) -> None:
    """A child exited: send its exit code to its client."""
    child, connection = key.data.child, key.data.connection
    selector.unregister(key.fd)
    os.close(key.fd)
    with contextlib.suppress(KeyError):
        selector.unregister(connection)
    _, status = os.waitpid(child, 0)
    with contextlib.suppress(OSError):  # the client is gone (killed): no one to tell
        connection.sendall(_EXIT_CODE.pack(os.waitstatus_to_exitcode(status)))
    connection.close()


def _start_command(
    connection: socket.socket,
    listener: socket.socket,
    run_command: Callable[[Request], None],
    own_group: bool,
) -> int | None:
    """Read one request and fork its child; the child's pid, sent to the client too."""
    try:
        header, fds, _, _ = socket.recv_fds(connection, _LENGTH.size, 3)
    except OSError:
        return None
    payload = None
    if len(header) == _LENGTH.size and len(fds) == 3:
        payload = _receive_exactly(connection, _LENGTH.unpack(header)[0])
    if payload is None:  # a client that ended mid-request: its streams are not kept
        for fd in fds:
            os.close(fd)
        return None
    request = Request(**json.loads(payload))
    child = os.fork()
    if child == 0:
        listener.close()
        connection.close()
        _run_child(request, fds, run_command, own_group)
    if own_group:
        # both sides set the child's group: it is the child's own before its client can end
        with contextlib.suppress(OSError):
            os.setpgid(child, child)
    # the child holds the client's streams now: a reader of the command's output reads to its
    # end when the child's copies and the client's close, not this process's
    for fd in fds:
        os.close(fd)
    try:
        connection.sendall(_PID.pack(child))
    except OSError:  # the client is gone: so is whoever would read the command's output
        _kill_command(child, own_group)
    return child


def _run_child(
    request: Request, fds: list[int], run_command: Callable[[Request], None], own_group: bool
) -> None:
    """In the forked child: take the client's streams, folder and environment, run the
    command; never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)  # a stop signal of the server's is the server's alone
        if own_group:
            os.setpgid(0, 0)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.chdir(request.cwd)
        os.environ.clear()
        os.environ.update(request.env)
        run_command(request)
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        # what the interpreter's exit would run, in its order (join the threads and run what
        # they registered, such as a process pool's shutdown; then the atexit functions), and
        # then nothing of the server's: os._exit, not an exception up the server's stack
        with contextlib.suppress(BaseException):
            threading._shutdown()  # type: ignore[attr-defined]
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)
