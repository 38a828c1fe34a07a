"""Files written on worker threads while the generator builds the next ones.

Creating a file can wait on the filesystem's journal for most of a millisecond while much is
being written, as it is while the large demo lands its 1.9 GB in 16,000 files; a thread waiting
so holds no GIL, so on threads those waits overlap the building of the next documents instead of
adding up (several seconds on the large demo).
"""

from __future__ import annotations

import collections
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import TracebackType


class BackgroundWriter:
    """Writes each file given to ``write`` on a worker thread; leaving the ``with`` block waits
    for every file and raises the first failure. At most ``pending`` files wait to be written
    at a time (``write`` waits for room), which bounds the bytes held for them."""

    def __init__(self, threads: int = 4, pending: int = 64) -> None:
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="demo-write")
        self._room = threading.BoundedSemaphore(pending)
        self._futures: collections.deque[Future[None]] = collections.deque()
        self._made: set[Path] = set()
        self.written = 0

    def __enter__(self) -> BackgroundWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._pool.shutdown(wait=True, cancel_futures=error is not None)
        if error is None:
            while self._futures:
                self._futures.popleft().result()

    def write(self, path: Path, data: bytes) -> None:
        """Write ``data`` to ``path`` (its folder created here, once per folder)."""
        while self._futures and self._futures[0].done():
            self._futures.popleft().result()  # a failed write stops the generation early
        if path.parent not in self._made:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._made.add(path.parent)
        self._room.acquire()
        self._futures.append(self._pool.submit(self._write, path, data))
        self.written += 1

    def _write(self, path: Path, data: bytes) -> None:
        try:
            with open(path, "wb") as out:
                out.write(data)
        finally:
            self._room.release()
