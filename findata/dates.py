"""Calendar arithmetic that every part shares."""

from __future__ import annotations

import datetime as dt


def years_before(day: dt.date, years: int) -> dt.date:
    """The same day ``years`` earlier; 29 February gives 28 February when that year has none."""
    try:
        return day.replace(year=day.year - years)
    except ValueError:
        return day.replace(year=day.year - years, day=28)
