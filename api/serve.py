"""Running the API under uvicorn so that it stops cleanly (``findata serve``, ``findata demo``).

One worker runs in this process; more run under a supervisor in this process (uvicorn's
``Multiprocess``, with its stop replaced). On the first SIGTERM or SIGINT (``GracefulStop``):
the listening socket closes, the requests in flight finish, each worker's lifespan shutdown
writes the usage it counted; past the grace period, or at a second signal, the workers are
killed and the command ends at once. Half a second before the grace period ends each worker
cuts the requests still running: they are answered 503 (``api/cut_requests.py``), the worker
ends at once, and the command exits with the forced-stop status, not 0. A worker takes its
stop from the supervisor only (a terminal's Ctrl-C reaches the whole process group: the workers
ignore SIGINT, and any number of SIGTERMs asks a worker for the same clean stop), so one signal
to the group stops as cleanly as one to the supervisor.

Each run gets an empty prometheus-client multiprocess folder (``api/prometheus.py``), set in
the environment before a worker (or this process's one worker) imports prometheus_client.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Generator
from multiprocessing import resource_tracker
from pathlib import Path
from socket import socket
from types import FrameType

from uvicorn import Config, Server
from uvicorn.supervisors.multiprocess import Multiprocess, Process

from findata.api.cut_requests import requests_were_cut
from findata.logs import LogFormat, logging_config
from findata.shutdown import GracefulStop, exit_at_once

APP_FACTORY = "findata.api.app:create_app"
MULTIPROCESS_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"  # api/prometheus.py reads it


class StoppableServer(Server):
    """The server of this process's one worker: the command's ``GracefulStop`` holds the
    signals (uvicorn's own handlers would end the process by the signal again once stopped)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class SupervisedServer(Server):
    """A worker under the supervisor: any SIGTERM asks for the clean stop; SIGINT is left to the
    supervisor (it reaches the worker too when a terminal sends it to the group)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, self.handle_exit)
        yield

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.should_exit = True


class SupervisedProcess(Process):
    """A uvicorn worker process that runs a ``SupervisedServer``."""

    @property
    def server(self) -> Server:
        if self._server is None:
            self._server = SupervisedServer(config=self.config)
        return self._server

    def target(self, sockets: list[socket] | None = None) -> None:
        """The worker's run (in the worker process). One whose stop cut requests short ends at
        once with the forced-stop status: the threads still running those requests are not
        waited for, and the supervisor learns that the stop was not clean."""
        super().target(sockets)
        if requests_were_cut():
            exit_at_once()


class Supervisor(Multiprocess):
    """uvicorn's worker supervisor (restarts a worker that dies, SIGHUP replaces them all) with
    the command's stop: the first SIGTERM or SIGINT asks each worker once for its clean stop;
    past the grace period or at a second signal the workers are killed."""

    def __init__(self, config: Config, sockets: list[socket], stop: GracefulStop) -> None:
        super().__init__(config, sockets)
        self.stop = stop
        stop.on_stop(self.should_exit.set)
        stop.on_stop(self.close_sockets)
        stop.on_force(self.kill_all)
        stop.install()  # in place of uvicorn's handlers of these two signals

    def init_processes(self) -> None:
        for _ in range(self.processes_num):
            process = SupervisedProcess(self.config, self.sockets)
            process.start()
            self.processes.append(process)

    def close_sockets(self) -> None:
        """No new connections: this process's copy of the listening socket closes (each worker
        closes its own as it stops), so the port refuses instead of queueing."""
        for sock in self.sockets:
            sock.close()

    def kill_all(self) -> None:
        """SIGKILL to every worker still running, and each waited for (none is left behind for
        another process to reap)."""
        for process in self.processes:
            if process.exitcode is None:
                process.process.kill()
        for process in self.processes:
            process.process.join(timeout=2)
        # the helper process multiprocessing starts beside spawned workers ends when this
        # process closes its end of the pipe; stopped and waited for here, as a clean exit
        # would (its private stop is the only way in; without it the helper ends a moment
        # after this process, reaped by init)
        tracker = getattr(resource_tracker, "_resource_tracker", None)
        if tracker is not None and hasattr(tracker, "_stop"):
            tracker._stop()

    def join_all(self) -> None:
        # the stop's watchdog or a second signal ends the wait (kill_all, then the exit)
        for process in self.processes:
            process.process.join()

    @property
    def stopped_cleanly(self) -> bool:
        """Every worker ended by itself after finishing its requests (exit status 0)."""
        return all(process.exitcode == 0 for process in self.processes)


def serve_api(
    host: str,
    port: int,
    workers: int,
    stop: GracefulStop,
    log_format: LogFormat,
) -> bool:
    """Serve the API until ``stop`` is asked for and the workers have finished, or end the
    process when the stop is forced. True when every request in flight was answered in full;
    False when the stop cut some short (answered 503)."""
    metrics_dir = Path(tempfile.mkdtemp(prefix="findata-metrics-"))
    os.environ[MULTIPROCESS_DIR_VARIABLE] = str(metrics_dir)
    stop.on_force(lambda: shutil.rmtree(metrics_dir, ignore_errors=True))
    if "prometheus_client" in sys.modules and workers == 1:
        # its values were made for one process: this process's worker could not write to the
        # folder the /metrics answer adds up (nothing of ours imports it before this)
        raise RuntimeError("prometheus_client was imported before the metrics folder was set")
    config = Config(
        APP_FACTORY,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        # uvicorn's access log prints query strings, which may hold a key: the API logs its own
        access_log=False,
        # each process writes its lines from a thread of its own (findata/logs.py): a request's
        # line written on the event loop would let go of the GIL there, once per request
        log_config=logging_config(log_format, background=True),
        timeout_graceful_shutdown=max(0.1, stop.grace_seconds - 0.5),
    )
    try:
        if workers > 1:
            supervisor = Supervisor(config, [config.bind_socket()], stop)
            supervisor.run()
            return supervisor.stopped_cleanly
        config.load_app()
        server = StoppableServer(config)
        stop.on_stop(lambda: setattr(server, "should_exit", True))
        stop.install()
        server.run()
        if not server.started and not stop.requested.is_set():
            raise SystemExit(3)  # uvicorn's STARTUP_FAILURE: the port, the app
        return not requests_were_cut()
    finally:
        shutil.rmtree(metrics_dir, ignore_errors=True)


def join_within(threads: list[threading.Thread], seconds: float) -> None:
    """Wait at most ``seconds`` in all for ``threads`` (the work beside the API, already asked
    to stop) to finish."""
    deadline = time.monotonic() + seconds
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
