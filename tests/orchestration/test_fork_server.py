"""The fork server (``orchestration/fork_server.py``): a command run in its child has the
client's streams, folder, environment and exit status; a killed client takes its command's
process group with it; the server ends when idle, and on its stop signal, refusing new clients
at once, once the running commands have ended; a client queued on a server that stops
listening is told that nothing ran.

Real processes and sockets: a server script whose commands are small Python functions, and a
client script that runs one command in it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from findata.orchestration import fork_server

SERVER = """
import os, signal, socket, subprocess, sys, time
from findata.orchestration import fork_server

def run(request):
    action, *rest = request.args
    if action == "echo":
        print(os.getcwd(), os.environ.get("PROBE"), flush=True)
        print("on stderr", file=sys.stderr, flush=True)
        raise SystemExit(int(rest[0]))
    if action == "fail":
        raise RuntimeError("the command failed")
    if action == "sleep":  # a process of its own beside it, then the pids of both
        other = subprocess.Popen(["sleep", "120"])
        print(os.getpid(), other.pid, flush=True)
        time.sleep(float(rest[0]))
    if action == "until":  # runs until the file rest[0] exists
        print(os.getpid(), flush=True)
        while not os.path.exists(rest[0]):
            time.sleep(0.05)

listener = socket.socket(fileno=int(sys.argv[1]))
print("ready", flush=True)
fork_server.serve(listener, run, idle_seconds=float(sys.argv[2]), own_group=True,
                  stop_signal=signal.SIGTERM, on_stop=listener.close)
"""

CLIENT = """
import socket, sys
from findata.orchestration import fork_server

connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
connection.connect(sys.argv[1])
code = fork_server.run_in_server(connection, sys.argv[2:])
sys.exit(99 if code is None else code)
"""


def _start_server(folder: Path, idle_seconds: float) -> tuple[subprocess.Popen[str], Path]:
    path = folder / "server.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    with listener:
        server = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(listener.fileno()), str(idle_seconds)],
            pass_fds=(listener.fileno(),),
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    assert server.stdout is not None and server.stdout.readline() == "ready\n"
    return server, path


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    server, path = _start_server(tmp_path, 600)
    yield server, path
    server.kill()
    server.wait()


def _client(path: Path, *args: str, **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CLIENT, str(path), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,  # type: ignore[call-overload]
    )


def _refused_within(path: Path, seconds: float) -> bool:
    """Whether connecting to ``path`` is refused within ``seconds`` (the server stopped
    listening)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        connection = fork_server.connect(str(path))
        if connection is None:
            return True
        connection.close()
        time.sleep(0.05)
    return False


def _gone(pids: list[int], within: float = 15.0) -> bool:
    """Whether every process of ``pids`` has ended (zombies count as ended) within seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = []
        for pid in pids:
            try:
                alive.append(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
            except psutil.NoSuchProcess:
                alive.append(False)
        if not any(alive):
            return True
        time.sleep(0.05)
    return False


def test_a_command_has_the_clients_streams_folder_environment_and_exit_status(
    server: tuple[subprocess.Popen[str], Path], tmp_path: Path
) -> None:
    _, path = server
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    client = _client(path, "echo", "3", cwd=folder, env={**os.environ, "PROBE": "probe-value"})
    out, err = client.communicate(timeout=60)
    assert client.returncode == 3
    assert out == f"{folder} probe-value\n"
    assert err == "on stderr\n"


def test_a_command_that_raises_exits_1_with_its_traceback(
    server: tuple[subprocess.Popen[str], Path],
) -> None:
    client = _client(server[1], "fail")
    _, err = client.communicate(timeout=60)
    assert client.returncode == 1
    assert "RuntimeError: the command failed" in err


def test_a_killed_client_takes_its_commands_process_group_with_it(
    server: tuple[subprocess.Popen[str], Path],
) -> None:
    client = _client(server[1], "sleep", "120", start_new_session=True)
    assert client.stdout is not None
    command, other = (int(pid) for pid in client.stdout.readline().split())
    assert os.getpgid(command) == command and os.getpgid(other) == command
    os.killpg(client.pid, signal.SIGKILL)
    client.wait()
    assert _gone([command, other])
    assert server[0].poll() is None  # the server goes on


def test_the_server_ends_once_idle_for_its_idle_seconds(tmp_path: Path) -> None:
    server, path = _start_server(tmp_path, 0.5)
    client = _client(path, "echo", "0")
    client.communicate(timeout=60)
    assert client.returncode == 0
    assert server.wait(timeout=30) == 0


def test_on_its_stop_signal_the_server_ends_once_the_running_command_has(
    server: tuple[subprocess.Popen[str], Path], tmp_path: Path
) -> None:
    process, path = server
    go_on = tmp_path / "go-on"
    client = _client(path, "until", str(go_on))
    assert client.stdout is not None
    client.stdout.readline()  # the command runs
    try:
        process.send_signal(signal.SIGTERM)
        # it stops listening at once (on_stop): a new client is refused, not queued
        assert _refused_within(path, 15.0)
        assert client.poll() is None  # the command still runs: the server waits for it
        assert process.poll() is None
    finally:
        go_on.touch()  # the command ends, failed assertion or not (its group outlives the server)
    client.communicate(timeout=60)
    assert client.returncode == 0
    assert process.wait(timeout=30) == 0


def test_a_client_queued_on_a_server_that_stops_listening_is_told_nothing_ran(
    tmp_path: Path,
) -> None:
    # a server ending (idle, or its stop signal) closes its listener with a client queued on
    # it: the client's request was never read, so it runs the command itself
    path = tmp_path / "server.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    connection = fork_server.connect(str(path))
    assert connection is not None
    listener.close()
    assert fork_server.run_in_server(connection, ["echo", "0"], forward_signals=False) is None
