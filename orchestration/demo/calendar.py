"""NYSE trading sessions, from the ``exchange_calendars`` library."""

from __future__ import annotations

import datetime as dt

import pandas as pd


def trading_sessions(first: dt.date, before: dt.date) -> pd.DatetimeIndex:
    """NYSE sessions from ``first`` (inclusive) to ``before`` (exclusive), weekends and
    US market holidays left out."""
    import exchange_calendars as xc  # slow import: only when a demo is generated

    calendar = xc.get_calendar("XNYS", start=pd.Timestamp(first), end=pd.Timestamp(before))
    sessions = calendar.sessions
    sessions = sessions[(sessions >= pd.Timestamp(first)) & (sessions < pd.Timestamp(before))]
    return pd.DatetimeIndex(sessions.tz_localize(None) if sessions.tz else sessions)
