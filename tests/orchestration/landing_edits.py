"""Landing edits the refresh tests make: one more trading day of prices (the demo's own
``advance``), a restating filing."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from findata.orchestration.demo.advance import add_price_day, next_session

__all__ = ["add_price_day", "next_session", "restate_latest_annual_revenue"]


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
