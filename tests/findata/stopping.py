"""Helpers of the clean-stop tests: a long-running ``findata`` command started as a user's
service manager starts it (a process group of its own), and the checks that nothing of it
remains."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

import httpx
import psutil

FINDATA = Path(sys.executable).parent / "findata"


def command_env(home: Path, grace_seconds: float, **settings: str) -> dict[str, str]:
    """The environment of a command on ``home`` with the given grace period; no other
    ``FINDATA_*`` variable of this process leaks in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FINDATA_")}
    env.update(
        FINDATA_HOME=str(home),
        FINDATA_SHUTDOWN_GRACE_SECONDS=str(grace_seconds),
        **{f"FINDATA_{name.upper()}": value for name, value in settings.items()},
    )
    return env


@contextmanager
def command_group(
    args: list[str], env: dict[str, str], output: IO[bytes], *, ignore_sigint: bool = False
) -> Iterator[subprocess.Popen[bytes]]:
    """``findata <args>`` in a process group of its own (its id is the process's); whatever of
    the group is left when the block ends is killed. ``ignore_sigint``: started with SIGINT
    ignored, as a shell starts a background job."""
    process = subprocess.Popen(
        [str(FINDATA), *args],
        env=env,
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
        if ignore_sigint
        else None,
    )
    try:
        yield process
    finally:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def group_processes(group: int) -> list[psutil.Process]:
    """The live processes of process group ``group`` (zombies not counted)."""
    found = []
    for process in psutil.process_iter(["status"]):
        try:
            if os.getpgid(process.pid) == group and process.info["status"] != "zombie":
                found.append(process)
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    return found


def wait_group_gone(process: subprocess.Popen[bytes], seconds: float) -> float:
    """Seconds until the group of ``process`` (its leader reaped meanwhile) has no process
    left; fails after ``seconds``."""
    started = time.monotonic()
    while True:
        process.poll()
        if process.returncode is not None and not group_processes(process.pid):
            try:
                os.killpg(process.pid, 0)
            except ProcessLookupError:
                return time.monotonic() - started
        if time.monotonic() - started > seconds:
            left = [p.cmdline()[:4] for p in group_processes(process.pid)]
            raise AssertionError(f"after {seconds} s the group still has {left}")
        time.sleep(0.05)


def send(process: subprocess.Popen[bytes], signum: int, to_group: bool) -> None:
    """``signum`` to the command's process (a container stop) or its whole group (a terminal's
    Ctrl-C, systemd's default)."""
    if to_group:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)


def port_is_free(port: int) -> bool:
    """Nothing listens on the loopback ``port`` (a restart could bind it)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def wait_answering(url: str, process: subprocess.Popen[bytes], seconds: float = 120) -> None:
    """Return once ``url`` answers (fail if the command exits first or it takes too long)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.TransportError:
            assert process.poll() is None, f"the command exited ({process.returncode})"
            assert time.monotonic() < deadline, f"{url} did not answer in {seconds} s"
            time.sleep(0.2)


def processes_of_home(home: Path) -> list[psutil.Process]:
    """Every process (of this user) whose environment names ``home`` as FINDATA_HOME or under
    it as DAGSTER_HOME: what a command on ``home`` started, wherever it went since."""
    found = []
    for process in psutil.process_iter():
        try:
            environment = process.environ()
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
        named = environment.get("FINDATA_HOME", ""), environment.get("DAGSTER_HOME", "")
        if any(value and Path(value).is_relative_to(home) for value in named):
            found.append(process)
    return found
