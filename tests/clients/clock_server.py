"""A findata server of a test module's own on the published demo, its clock standing at 10:15
UTC today (45 minutes to the next clock hour, 13 h 45 min to midnight), so the client's waits
to a UTC boundary have known lengths; moving its clock never moves the shared server's."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from findata.api.app import create_app
from findata.clock import ManualClock
from findata.settings import Settings
from tests.api.server import RunningApi, serve

START = dt.time(10, 15)
TO_NEXT_HOUR = 45 * 60
TO_MIDNIGHT = 13 * 3600 + 45 * 60


def ten_fifteen() -> dt.datetime:
    """10:15 UTC today."""
    return dt.datetime.combine(dt.datetime.now(dt.UTC).date(), START, tzinfo=dt.UTC)


@contextmanager
def clock_server(published_home: Path, **settings: Any) -> Iterator[RunningApi]:
    """Serve the published demo with a clock at 10:15 UTC today (``settings`` added to the
    server's); the server's slow-downs are not waited."""
    clock = ManualClock(ten_fifteen())
    app = create_app(Settings(home=published_home, **settings), clock, sleep=lambda _: None)
    with serve(app, clock) as running:
        yield running


def use(api: RunningApi, subject: str, *, requests: int = 0, rows: int = 0) -> None:
    """Count usage for ``subject`` (an account id, or ``ip:<address>``) at the server's now."""
    api.counters.add_usage(subject, api.clock.now(), requests=requests, rows=rows)


class MovingSleep(list[float]):
    """A ``sleep`` that records each wait and moves the server's clock by it instead of
    waiting, so a waited-out 429 is answered as it would be after the real wait."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__()
        self.clock = clock

    def __call__(self, seconds: float) -> None:
        self.append(seconds)
        self.clock.advance(dt.timedelta(seconds=seconds))
