"""NYSE trading sessions, from the ``exchange_calendars`` library."""

from __future__ import annotations

import datetime as dt
import functools

import pandas as pd


@functools.cache
def _xnys_sessions(first_year: int, last_year: int) -> pd.DatetimeIndex:
    """Every NYSE session of whole calendar years (building a calendar takes a tenth of a
    second: the generator's property tests ask for many spans of the same years)."""
    import exchange_calendars as xc  # slow import: only when a demo is generated

    calendar = xc.get_calendar(
        "XNYS",
        start=pd.Timestamp(first_year, 1, 1),
        end=pd.Timestamp(last_year, 12, 31),
    )
    sessions = calendar.sessions
    return pd.DatetimeIndex(sessions.tz_localize(None) if sessions.tz else sessions)


def trading_sessions(first: dt.date, before: dt.date) -> pd.DatetimeIndex:
    """NYSE sessions from ``first`` (inclusive) to ``before`` (exclusive), weekends and
    US market holidays left out."""
    sessions = _xnys_sessions(first.year, before.year)
    return sessions[(sessions >= pd.Timestamp(first)) & (sessions < pd.Timestamp(before))]
