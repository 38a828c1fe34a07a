"""``GET /healthz`` and ``GET /readyz``: for the service manager and the load balancer, outside
``/v1/``, with no key and no quota cost (``/v1/status`` stays as the spec says).

``/healthz``: the process answers (no I/O). ``/readyz``: the parts a request needs answer: the
control plane, the current published version (its file and parts open), the shared cache when
one is set; otherwise 503 naming each failing part (the reasons go to the log). The checks run
at the same time, each on a thread of its own, and each has ``CHECK_SECONDS`` to answer: the
probe answers within that however many parts hang (a load balancer's probe often gives up after
1 s). A check that hangs keeps its thread until its dependency answers or fails; the probes
meanwhile wait on that same check instead of starting another, so hung checks do not pile up.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import JSONResponse

from findata.api.cache import ResponseCache
from findata.api.published import PublishedData
from findata.published.served_copy import VERSION_CATALOG
from findata.published.versions import version_part_files

log = logging.getLogger("findata.api.health")

CHECK_SECONDS = 0.8

#: the checks run beside the request's thread (each waited for at most CHECK_SECONDS)
_checks = ThreadPoolExecutor(8, thread_name_prefix="readyz")
#: the check of each (app, part) last started: a probe waits on it while it still runs
_started: dict[tuple[int, str], Future[None]] = {}
_started_lock = threading.Lock()


async def healthz(_request: Request) -> JSONResponse:
    """Alive: answered on the event loop, without I/O."""
    return JSONResponse({"status": "ok"})


def readyz(request: Request) -> JSONResponse:
    """Ready when every part answers; 503 with the failing parts named otherwise."""
    state = request.app.state
    checks: dict[str, Callable[[], None]] = {
        "control_plane": lambda: check_control_plane(state.engine),
        "published": lambda: check_published(state.published),
    }
    if state.settings.cache_url:
        checks["cache"] = lambda: check_cache(state.cache)
    running = {part: _start(id(request.app), part, check) for part, check in checks.items()}
    wait(running.values(), timeout=CHECK_SECONDS)
    failing: dict[str, str] = {}
    for part, future in running.items():
        if not future.done():
            failing[part] = f"no answer within {CHECK_SECONDS:g} s"
        elif (error := future.exception()) is not None:
            # any failure makes the part not ready; the reason goes to the log
            failing[part] = _reason(error)
    if failing:
        # the reasons go to the log only: they may name hosts, which a public probe must not
        log.warning("not ready: %s", "; ".join(f"{p}: {r}" for p, r in sorted(failing.items())))
        return JSONResponse({"status": "unavailable", "failing": sorted(failing)}, status_code=503)
    return JSONResponse({"status": "ready", "checked": sorted(checks)})


def _start(app: int, part: str, check: Callable[[], None]) -> Future[None]:
    """The check of ``part``: the one still running since an earlier probe, or a new one."""
    with _started_lock:
        future = _started.get((app, part))
        if future is None or future.done():
            future = _started[(app, part)] = _checks.submit(check)
        return future


def check_control_plane(engine: sa.Engine) -> None:
    """The control-plane database answers a query."""
    with engine.connect() as connection:
        connection.execute(sa.text("SELECT 1")).all()


def check_published(published: PublishedData) -> None:
    """The current version is on record, its file opens and its part files are there."""
    version = published.current()
    if version is None:
        raise LookupError("no version is published yet")
    if not version.path.exists():
        raise FileNotFoundError(f"the current version's file {version.path.name} is missing")
    lease = published.lease(version)
    try:
        cursor = lease.cursor
        parts = version_part_files(cursor, VERSION_CATALOG)
    finally:
        lease.release()
    missing = [part for part in parts if not (version.path.parent / Path(part)).exists()]
    if missing:
        raise FileNotFoundError(f"{len(missing)} part file(s) of the current version are missing")


def check_cache(cache: ResponseCache) -> None:
    """The shared cache (Redis) answers."""
    cache.check()


def _reason(error: BaseException) -> str:
    """A failure in one line, without a URL's password (a database error may quote its URL)."""
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return f"{type(error).__name__}: {text}"[:300]
