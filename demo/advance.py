"""The demo one trading session on: a price file with one more bar for some securities, as a
price vendor's daily file would add it (the refresh then publishes a version with that day)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd

from findata.demo.calendar import trading_sessions

PRICE_COLUMNS = [
    "entity_id",
    "ticker",
    "date",
    "open",
    "high",
    "low",
    "close",
    "volume",
    "shares_outstanding",
]


def next_session(day: dt.date) -> dt.date:
    """The NYSE session after ``day``."""
    return trading_sessions(day + dt.timedelta(days=1), day + dt.timedelta(days=10))[0].date()


def add_price_day(landing: Path, day: dt.date, entity_ids: list[int]) -> None:
    """A new price file with one bar on ``day`` for each of ``entity_ids`` (their last close)."""
    prices = pd.concat(pd.read_csv(p) for p in sorted((landing / "prices").glob("*.csv")))
    last = (
        prices[prices["entity_id"].isin(entity_ids)].sort_values("date").groupby("entity_id").last()
    )
    rows = last.reset_index()[["entity_id", "ticker", "close", "volume", "shares_outstanding"]]
    rows = rows.assign(
        date=day.isoformat(),
        open=rows["close"],
        high=rows["close"] * 1.01,
        low=rows["close"] * 0.99,
    )
    rows[PRICE_COLUMNS].round(2).to_csv(
        landing / "prices" / f"prices_extra_{day:%Y%m%d}.csv", index=False
    )
