"""Landing edits the refresh tests make: one more trading day of prices (the demo's own
``advance``), a restating filing, a split landing for an earlier date, a restated bar, an issuer
moved to another sector, a new Form 4 and another one changed, a 13F report restated, a 13F
whose cover total its rows do not add up to."""

from __future__ import annotations

import csv
import datetime as dt
import json
import re
import shutil
from collections import Counter
from pathlib import Path

from findata.demo.advance import add_price_day, next_session
from findata.sources.readers.form13f import read_13f_cover

__all__ = [
    "add_price_day",
    "add_split_mid_history",
    "file_13f_with_cover_total_off",
    "file_form4_and_amend_another",
    "next_session",
    "reclassify_issuer",
    "restate_13f_report",
    "restate_bar_and_remove_the_next",
    "restate_latest_annual_revenue",
]


def _bars(landing: Path, entity_id: int) -> list[tuple[Path, int, dict[str, str]]]:
    """The security's bars in landing: file, line index, row; in date order."""
    found = []
    for path in sorted((landing / "prices").glob("*.csv")):
        with path.open(newline="") as handle:
            for index, row in enumerate(csv.DictReader(handle)):
                if row["entity_id"] == str(entity_id):
                    found.append((path, index, row))
    return sorted(found, key=lambda bar: bar[2]["date"])


def add_split_mid_history(landing: Path, entity_id: int, ratio: float = 2.0) -> dt.date:
    """A split of the security on the date of its middle bar, landed late in a corporate-actions
    file of its own (as a correction arrives); returns the ex-date."""
    bars = _bars(landing, entity_id)
    row = bars[len(bars) // 2][2]
    path = landing / "corporate_actions" / "corporate_actions_correction.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["entity_id", "ticker", "action", "ex_date", "announced", "ratio", "amount"]
        )
        writer.writerow([entity_id, row["ticker"], "split", row["date"], row["date"], ratio, ""])
    return dt.date.fromisoformat(row["date"])


def restate_bar_and_remove_the_next(landing: Path, entity_id: int) -> tuple[dt.date, dt.date]:
    """Restate the close of a bar a third into the security's history (halfway to its high or
    low) and remove the bar after it; returns both dates."""
    bars = _bars(landing, entity_id)
    at = len(bars) // 3
    (path, index, row), (next_path, next_index, next_row) = bars[at], bars[at + 1]
    close, high, low = float(row["close"]), float(row["high"]), float(row["low"])
    restated = round((close + high) / 2 if high - close > 0.02 else (close + low) / 2, 2)
    edits = {(path, index): {**row, "close": str(restated)}, (next_path, next_index): None}
    for edited in {path, next_path}:
        with edited.open(newline="") as handle:
            reader = csv.DictReader(handle)
            fields, rows = reader.fieldnames, list(reader)
        kept = [edits.get((edited, i), r) for i, r in enumerate(rows)]
        with edited.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=fields or [])
            writer.writeheader()
            writer.writerows(r for r in kept if r is not None)
    return dt.date.fromisoformat(row["date"]), dt.date.fromisoformat(next_row["date"])


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


def reclassify_issuer(landing: Path, issuer_entity_id: int, sector: str) -> list[int]:
    """Move the issuer, and so each of its securities, to GICS sector ``sector`` in the security
    master (every row of them, as a reclassification lands); returns the securities' ids. Every
    bar of each of them is labelled with the sector."""
    path = landing / "security_master" / "security_master.csv"
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        fields, rows = list(reader.fieldnames or []), list(reader)
    securities = set()
    for row in rows:
        if row["issuer_entity_id"] == str(issuer_entity_id):
            row["gics_sector"] = sector
            if row["entity_grain"] == "security":
                securities.add(int(row["entity_id"]))
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return sorted(securities)


_SHARES = re.compile(r"(<transactionShares>\s*<value>)([0-9.]+)(</value>)")


def file_form4_and_amend_another(landing: Path) -> tuple[str, str]:
    """A new Form 4 (a copy of the first one in landing under a new accession, its first
    transaction's shares doubled) and the last one's first transaction's shares changed in
    place; returns both accessions (the new, the changed)."""
    filings = sorted((landing / "sec" / "form4").glob("*.xml"))
    first, last = filings[0], filings[-1]
    owner, year, _ = first.stem.split("-")
    new = f"{owner}-{year}-990001"

    def doubled(match: re.Match[str]) -> str:
        return f"{match[1]}{float(match[2]) * 2:g}{match[3]}"

    text, count = _SHARES.subn(doubled, first.read_text(), count=1)
    assert count == 1, first
    (first.parent / f"{new}.xml").write_text(text)
    text, count = _SHARES.subn(lambda m: f"{m[1]}{float(m[2]) + 1:g}{m[3]}", last.read_text(), 1)
    assert count == 1, last
    last.write_text(text)
    return new, last.stem


_SHARES_13F = re.compile(r"(<ns1:sshPrnamt>)([0-9]+)(</ns1:sshPrnamt>)")


def restate_13f_report(landing: Path) -> tuple[str, str]:
    """A 13F-HR/A restating the first 13F report in landing that is its manager's only filing
    for the quarter (a copy of it under a new accession, filed the same day, its first
    holding's shares doubled); returns the new accession and the restated one."""
    folders = sorted(p for p in (landing / "sec" / "13f").iterdir() if p.is_dir())
    covers = {p.name: read_13f_cover(p / "primary_doc.xml") for p in folders}
    quarters = Counter((c.manager_cik, c.period) for c in covers.values())
    original = next(
        p for p in folders if quarters[(covers[p.name].manager_cik, covers[p.name].period)] == 1
    )
    filer, year, _ = original.name.split("-")
    new = f"{filer}-{year}-990001"
    # the latest complete report of the quarter: filed the same day, the higher accession
    assert new > original.name and new not in covers, (new, original)
    restated = landing / "sec" / "13f" / new
    restated.mkdir()
    cover = (original / "primary_doc.xml").read_text()
    amendment = (
        "<isAmendment>true</isAmendment>\n      <amendmentNo>1</amendmentNo>\n"
        "      <amendmentInfo>\n        <amendmentType>RESTATEMENT</amendmentType>\n"
        "        <confDeniedExpired>false</confDeniedExpired>\n      </amendmentInfo>"
    )
    cover, count = re.subn("<isAmendment>false</isAmendment>", amendment, cover)
    assert count == 1, original
    cover = cover.replace(
        "<submissionType>13F-HR</submissionType>", "<submissionType>13F-HR/A</submissionType>"
    )
    (restated / "primary_doc.xml").write_text(cover)
    table, count = _SHARES_13F.subn(
        lambda m: f"{m[1]}{int(m[2]) * 2}{m[3]}", (original / "infotable.xml").read_text(), 1
    )
    assert count == 1, original
    (restated / "infotable.xml").write_text(table)
    return new, original.name


#: tests/fixtures: Bard's real 13F-HR (278 rows, thousands), and its cover crafted to say
#: $1,000,000 more than the rows add up to (CRAFTED.yaml)
FIXTURES = Path(__file__).parents[1] / "fixtures"
BARD_13F = FIXTURES / "13f" / "bard-financial-services_2021q3"
COVER_TOTAL_OFF = FIXTURES / "13f-crafted" / "bard-financial-services_2021q3-cover-total-off"


def file_13f_with_cover_total_off(landing: Path) -> str:
    """Land Bard's real information table with the crafted cover whose total is $1,000,000 above
    the rows' sum (a manager the demo does not have); returns its accession (the folder name)."""
    accession = COVER_TOTAL_OFF.name
    folder = landing / "sec" / "13f" / accession
    folder.mkdir()
    shutil.copyfile(COVER_TOTAL_OFF / "primary_doc.xml", folder / "primary_doc.xml")
    shutil.copyfile(BARD_13F / "infotable.xml", folder / "infotable.xml")
    return accession
