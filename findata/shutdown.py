"""Clean stops of the long-running commands (``serve``, ``ui``, ``webhooks worker``, ``demo``
while serving).

The first SIGTERM or SIGINT asks the command to stop: it takes no new work and lets what is in
flight finish within the grace period (``FINDATA_SHUTDOWN_GRACE_SECONDS``), then exits 0. When
the grace period runs out, or at a second signal, the command ends what remains at once (its
``on_force`` steps: child processes killed) and exits with ``FORCED_EXIT_STATUS``.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType

log = logging.getLogger("findata.shutdown")

#: the exit status of a command stopped before its in-flight work finished
FORCED_EXIT_STATUS = 1
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def exit_at_once() -> None:
    """End this process now with ``FORCED_EXIT_STATUS``, its log lines written first (no
    other cleanup runs, and no thread still working is waited for)."""
    for handler in logging.getLogger().handlers:
        handler.flush()
    os._exit(FORCED_EXIT_STATUS)


class GracefulStop:
    """One command's stop: what the first signal starts, and what ends it at once."""

    def __init__(self, grace_seconds: float, command: str) -> None:
        self.grace_seconds = grace_seconds
        self.command = command
        self.requested = threading.Event()
        self._on_stop: list[Callable[[], None]] = []
        self._on_force: list[Callable[[], None]] = []
        self._deadline: float | None = None
        self._watchdog: threading.Timer | None = None

    def on_stop(self, step: Callable[[], None]) -> None:
        """Run ``step`` when the stop is asked for (it must not block: it asks for no new
        work)."""
        self._on_stop.append(step)

    def on_force(self, step: Callable[[], None]) -> None:
        """Run ``step`` before the process ends at once (kill what would outlive it)."""
        self._on_force.append(step)

    def install(self) -> None:
        """Handle SIGTERM and SIGINT in this process (call from the main thread). Child
        processes started afterwards get the default handlers (a caught signal is reset at
        exec), even where the command was started with SIGINT ignored (a background job)."""
        for stop_signal in STOP_SIGNALS:
            signal.signal(stop_signal, self._signalled)

    def request(self, why: str) -> None:
        """Ask for the stop: the ``on_stop`` steps run, and the grace period starts."""
        if self.requested.is_set():
            return
        self._deadline = time.monotonic() + self.grace_seconds
        self.requested.set()
        log.info(
            "%s: %s: finishing in-flight work (at most %g s; a second signal stops at once)",
            self.command,
            why,
            self.grace_seconds,
        )
        self._watchdog = threading.Timer(self.grace_seconds, self._grace_elapsed)
        self._watchdog.daemon = True
        self._watchdog.start()
        for step in self._on_stop:
            step()

    def remaining(self) -> float:
        """Seconds left of the grace period (all of it before the stop is asked for)."""
        if self._deadline is None:
            return self.grace_seconds
        return max(0.0, self._deadline - time.monotonic())

    def finished(self) -> None:
        """The in-flight work finished: no forced end any more."""
        if self._watchdog is not None:
            self._watchdog.cancel()

    def force(self, why: str) -> None:
        """End now: the ``on_force`` steps, then the process exits (no cleanup of this
        process runs: what is left in flight is abandoned)."""
        log.warning("%s: %s: stopping at once", self.command, why)
        for step in self._on_force:
            try:
                step()
            except Exception:  # the next steps and the exit still happen
                log.exception("%s: a forced stop step failed", self.command)
        exit_at_once()

    def _signalled(self, signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.requested.is_set():
            self.force(f"second signal ({name})")
        self.request(name)

    def _grace_elapsed(self) -> None:
        self.force(f"the grace period of {self.grace_seconds:g} s ran out")
