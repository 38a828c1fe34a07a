"""The one injectable clock: code asks a ``Clock`` for time, tests move a ``ManualClock``."""

from __future__ import annotations

import datetime as dt
from typing import Protocol


class Clock(Protocol):
    """Anything that tells the current UTC time."""

    def now(self) -> dt.datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    """The real wall clock."""

    def now(self) -> dt.datetime:
        """The current time, timezone-aware UTC."""
        return dt.datetime.now(dt.UTC)


class ManualClock:
    """A clock that stands still until a test moves it."""

    def __init__(self, start: dt.datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("ManualClock needs a timezone-aware start time")
        self._now = start.astimezone(dt.UTC)

    def now(self) -> dt.datetime:
        """The time the clock was last set or moved to."""
        return self._now

    def advance(self, delta: dt.timedelta) -> None:
        """Move the clock forward (or back, with a negative delta)."""
        self._now += delta

    def set(self, when: dt.datetime) -> None:
        """Jump to ``when`` (timezone-aware)."""
        if when.tzinfo is None:
            raise ValueError("ManualClock.set needs a timezone-aware time")
        self._now = when.astimezone(dt.UTC)


def utc_today(clock: Clock) -> dt.date:
    """Today's date in UTC by ``clock``."""
    return clock.now().date()


_clock: Clock = SystemClock()


def get_clock() -> Clock:
    """The process clock (the system clock unless a test or server installed another)."""
    return _clock


def set_clock(clock: Clock) -> Clock:
    """Install ``clock`` as the process clock; returns the previous one so it can be restored."""
    global _clock
    previous, _clock = _clock, clock
    return previous


def utc_seconds_text(when: dt.datetime) -> str:
    """``when`` as UTC ``YYYY-MM-DDTHH:MM:SSZ`` (the spec's event timestamps)."""
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def as_utc(value: dt.datetime) -> dt.datetime:
    """A stored time as aware UTC (SQLite hands back naive datetimes, written as UTC)."""
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
