"""Landing edits the refresh tests make: one more trading day of prices, a restating filing."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pandas as pd


def next_session(day: dt.date) -> dt.date:
    """The NYSE session after ``day``."""
    from findata.orchestration.demo.calendar import trading_sessions

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
    columns = [
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
    rows[columns].round(2).to_csv(
        landing / "prices" / f"prices_extra_{day:%Y%m%d}.csv", index=False
    )


def restate_latest_annual_revenue(landing: Path, cik: str, filed: dt.date) -> tuple[str, str]:
    """Add a 10-K/A to the issuer's companyfacts restating its latest annual revenue."""
    path = landing / "sec" / "companyfacts" / f"CIK{cik}.json"
    document = json.loads(path.read_bytes())
    revenues = document["facts"]["us-gaap"]["Revenues"]["units"]["USD"]
    annual = [
        f
        for f in revenues
        if f["form"] == "10-K" and f.get("start", "")[5:] == "01-01" and f["end"][5:] == "12-31"
    ]
    latest = max(annual, key=lambda f: (f["end"], f["filed"]))
    accession = f"{cik}-{filed:%y}-900001"
    revenues.append(
        {
            **latest,
            "val": latest["val"] * 0.9,
            "accn": accession,
            "form": "10-K/A",
            "filed": filed.isoformat(),
        }
    )
    path.write_bytes(json.dumps(document, separators=(",", ":")).encode())
    return latest["end"], accession
