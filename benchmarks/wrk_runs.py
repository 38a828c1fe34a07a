"""What the wrk benchmarks against a floor share (``api_floor.py``, ``api_shapes.py``): servers
started in process groups of their own and pinned to a core, wrk found or installed, one wrk run
read back from the line its Lua ``done`` prints, and every server stopped on the way out.

A wrk script used with :func:`run_wrk` takes ``-- MODE BASE THREADS KEY`` and its ``done``
prints one line: :data:`RESULT_MARK` and a JSON object with :class:`Run`'s fields.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from served_homes import wait_until_answering

RESULT_MARK = "API_FLOOR_RESULT "

#: the Lua ``done`` of the wrk scripts (a %-template: ``mark`` is RESULT_MARK): one line with
#: RESULT_MARK and the run's figures as JSON, from the counts every thread kept (``sent``,
#: ``non2xx``, ``hits``, ``statuses``, ``base``)
LUA_DONE = r"""
function done(summary, latency, requests)
  local most, non2xx_all, hits_all, counts, by_status = 0, 0, 0, {}, {}
  for _, thread in ipairs(threads) do
    local count = thread:get("sent")
    if count > most then most = count end
    non2xx_all = non2xx_all + thread:get("non2xx")
    hits_all = hits_all + thread:get("hits")
    for status, n in pairs(thread:get("statuses")) do
      counts[status] = (counts[status] or 0) + n
    end
  end
  for status, n in pairs(counts) do
    by_status[#by_status + 1] = string.format('"%%s": %%d', status, n)
  end
  local e = summary.errors
  io.write(string.format(
    '%(mark)s{"requests": %%d, "seconds": %%.3f, "bytes": %%d, "p50_ms": %%.2f, ' ..
    '"p90_ms": %%.2f, "p99_ms": %%.2f, "max_ms": %%.2f, "non2xx": %%d, "cache_hits": %%d, ' ..
    '"socket_errors": %%d, "timeouts": %%d, "statuses": {%%s}, "next_base": %%d}\n',
    summary.requests, summary.duration / 1e6, summary.bytes,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000,
    latency:percentile(99) / 1000, latency.max / 1000, non2xx_all, hits_all,
    e.connect + e.read + e.write, e.timeout, table.concat(by_status, ", "),
    threads[1]:get("base") + #threads * (most + 1)))
end

"""


@dataclass
class Server:
    """A server process started here (its own process group), and its base URL."""

    name: str
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        """SIGTERM to its process group, SIGKILL after 20 s."""
        if self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        except ProcessLookupError:
            pass


@dataclass
class Run:
    """One wrk run's figures (what the Lua ``done`` printed)."""

    requests: int
    seconds: float
    bytes: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    non2xx: int
    cache_hits: int
    socket_errors: int
    timeouts: int
    statuses: dict[str, int] = field(default_factory=dict)
    next_base: int = 0

    @property
    def per_second(self) -> float:
        """Completed requests per second."""
        return self.requests / self.seconds if self.seconds else 0.0


def ensure_wrk() -> str:
    """wrk's path; installs Debian's ``wrk`` when it is missing and this runs as root."""
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() != 0:
        raise SystemExit(
            "wrk is not installed and this is not root: install it (Debian/Ubuntu: "
            "sudo apt-get install -y wrk) and run again."
        )
    print("installing wrk (apt-get install -y -qq wrk) …", file=sys.stderr)
    install = ["apt-get", "install", "-y", "-qq", "wrk"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if subprocess.run(install, env=env, check=False, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, check=False, capture_output=True)
        subprocess.run(install, env=env, check=False)
    found = shutil.which("wrk")
    if not found:
        raise SystemExit("could not install wrk with apt-get; install it and run again.")
    return found


def pinned(core: int | None, command: list[str]) -> list[str]:
    """``command`` run on ``core`` alone (``taskset``), or as it is when ``core`` is None."""
    return ["taskset", "-c", str(core), *command] if core is not None else command


def start_server(
    name: str, command: list[str], env: dict[str, str], port: int, logs: Path, probe: str
) -> Server:
    """Start ``command`` in a process group of its own and wait until ``probe`` answers."""
    log = logs / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = Server(name, f"http://127.0.0.1:{port}", process, log)
    if wait_until_answering(server.url + probe, process):
        return server
    if process.poll() is not None:
        sys.stderr.write(log.read_text()[-3000:])
        raise SystemExit(f"{name} exited with {process.returncode}")
    server.stop()
    raise SystemExit(f"{name} did not answer within 120 s (log: {log})")


def run_wrk(
    wrk: str,
    script: Path,
    server: Server,
    mode: str,
    base: int,
    key: str,
    args: argparse.Namespace,
    *,
    warmup: bool = False,
) -> Run:
    """One wrk run against ``server`` (``--seconds`` long, or ``--warmup``); its requests are
    numbered from ``base``; ``key`` goes in ``X-API-Key`` unless empty. ``args`` gives
    ``seconds``, ``warmup``, ``threads``, ``connections`` and ``wrk_core``."""
    seconds = args.warmup if warmup else args.seconds
    command = pinned(
        args.wrk_core,
        [
            wrk,
            f"-t{args.threads}",
            f"-c{args.connections}",
            f"-d{max(1, round(seconds))}s",
            "--timeout",
            "60s",
            "-s",
            str(script),
            server.url,
            "--",
            mode,
            str(base),
            str(args.threads),
            key,
        ],
    )
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    line = next((line for line in result.stdout.splitlines() if line.startswith(RESULT_MARK)), None)
    if result.returncode != 0 or line is None:
        sys.stderr.write(result.stdout[-2000:] + result.stderr[-2000:])
        raise SystemExit(f"wrk failed against {server.name} ({mode})")
    return Run(**json.loads(line[len(RESULT_MARK) :]))


@contextmanager
def servers_stopped_at_exit(servers: list[Server]) -> Iterator[None]:
    """Stop every server in ``servers`` on the way out: normal end, error, Ctrl-C or SIGTERM."""

    def terminated(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        for server in reversed(servers):
            server.stop()
        signal.signal(signal.SIGTERM, previous)
