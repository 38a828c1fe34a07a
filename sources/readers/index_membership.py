"""Index membership files (``contracts/landing/index_membership.yaml``).

Besides the project's layout and the publisher layouts that only need renaming, this reader
turns fja05680's ``date,add,remove`` change list into membership intervals.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from findata.contracts.landing import load_landing_format
from findata.sources.readers.errors import MalformedFileError
from findata.sources.readers.landing_csv import (
    LandingText,
    parse_date_text,
    read_header,
    read_landing_csv,
    zero_padded_ciks,
)

FORMAT = "index_membership"
_CHANGES = "changes"
_EVENT_COLUMNS = {"add": "added", "remove": "removed"}


def read_index_membership(path: str | Path, index: str | None = None) -> pd.DataFrame:
    """Read a landing index-membership file as membership intervals.

    The index code is ``index`` if given, else the file name prefix (``sp500_…``), else the
    file's ``index`` column; a file with none of them raises MalformedFileError.

    Returns membership intervals in contract order: index, entity_id (Int64; <NA> in publisher
    layouts, which carry tickers only), ticker (string), added, removed (datetime64[s]; removed
    <NA> while a member, added <NA> where the file cannot know it), name, cik (string; only a
    constituents snapshot gives them, cik zero padded to 10), with ``attrs["layout"]``.
    Raises MalformedFileError for a file that breaks the contract.
    """
    fmt = load_landing_format(FORMAT)
    codes = fmt.column("index").allowed or []
    if index is not None and index not in codes:
        raise ValueError(f"unknown index {index!r}; expected one of {', '.join(codes)}")
    code = index or _code_from_file_name(Path(path), codes)
    if code is None and "index" not in read_header(path, fmt.encoding):
        raise MalformedFileError(
            path,
            f"no index code: pass index=, start the file name with one of "
            f"{', '.join(f'{c}_' for c in codes)}, or give an index column",
        )
    frame = read_landing_csv(
        path,
        FORMAT,
        fill={"index": code} if code else None,
        reshapers={_CHANGES: changes_as_intervals},
    )
    frame["cik"] = zero_padded_ciks(frame["cik"])
    return frame


def _code_from_file_name(path: Path, codes: list[str]) -> str | None:
    prefix = path.name.split("_", 1)[0].lower()
    return prefix if prefix in codes else None


def changes_as_intervals(raw: LandingText) -> LandingText:
    """Pair each ticker's additions and removals of a ``date,add,remove`` file in date order.

    One row per interval: ticker, added, removed as text (YYYY-MM-DD). A removal with no earlier
    addition gives an empty ``added`` (the member joined before the file's coverage); an addition
    never removed gives an empty ``removed``; a ticker can be re-added later. A cell may name
    several tickers (``"CTVA,DD"``) or none. An addition while already a member, a second removal
    without an addition between, or a ticker added and removed on one date rejects the file.
    Each interval keeps the file line that opened it (the removal's, if it has no addition).
    """
    expected = ["date", *_EVENT_COLUMNS]
    unknown = [name for name in raw.rows.columns if name not in expected]
    if unknown:
        raw.fail(f"line 1 (header): unknown column(s) for layout {_CHANGES}: {', '.join(unknown)}")
    dates = parse_date_text(raw, "date")
    undated = dates.isna().to_numpy()
    if undated.any():
        raw.fail_rows(undated, "column date must have a value [rule: required]", expected)
    events = _events(raw, dates)
    _reject_same_day_add_and_remove(raw, events)
    intervals = _paired(raw, events)
    rows = pd.DataFrame(
        {
            name: pd.array([getattr(i, name) for i in intervals], dtype="string[pyarrow]")
            for name in ("ticker", "added", "removed")
        }
    )
    records = raw.records[np.array([i.position for i in intervals], dtype=np.int64)]
    return LandingText(raw.path, raw.encoding, rows, records)


def _events(raw: LandingText, dates: pd.Series) -> pd.DataFrame:
    """One row per ticker named in an add or remove cell: position (row), slot (order within
    the cell), ticker, kind, date (text) and day (typed), sorted by ticker, day and row."""
    parts = []
    for column, kind in _EVENT_COLUMNS.items():
        tickers = raw.rows[column].astype(object).str.split(",").explode().str.strip()
        tickers = tickers[tickers.notna() & (tickers != "")]
        positions = tickers.index.to_numpy()
        parts.append(
            pd.DataFrame(
                {
                    "position": positions,
                    "slot": tickers.groupby(level=0).cumcount().to_numpy(),
                    "ticker": tickers.to_numpy(dtype=object),
                    "kind": kind,
                    "date": raw.rows["date"].to_numpy(dtype=object)[positions],
                    "day": dates.to_numpy()[positions],
                }
            )
        )
    events = pd.concat(parts, ignore_index=True)
    return events.sort_values(["ticker", "day", "position", "slot"], kind="stable")


def _reject_same_day_add_and_remove(raw: LandingText, events: pd.DataFrame) -> None:
    kinds = events.groupby(["ticker", "day"])["kind"].transform("nunique")
    clash = events[kinds > 1]
    if len(clash):
        first = clash.iloc[0]
        offending = np.zeros(len(raw.rows), dtype=bool)
        offending[clash["position"].to_numpy()] = True
        raw.fail_rows(
            offending,
            f"ticker {first.ticker} is both added and removed on {first.date}, so the order "
            f"of membership is unknown [rule: changes pair additions and removals in date order]",
            ["date", *_EVENT_COLUMNS],
        )


@dataclass
class _Interval:
    ticker: str
    added: str | None
    removed: str | None
    position: int  # row of the file that opened it (the removal's, without an addition)
    slot: int  # order within that row's cell


def _paired(raw: LandingText, events: pd.DataFrame) -> list[_Interval]:
    intervals: list[_Interval] = []
    for ticker, history in events.groupby("ticker", sort=True):
        opened: _Interval | None = None
        previous: dict | None = None
        for event in history.to_dict("records"):
            if event["kind"] == "added":
                if opened is not None:
                    problem = f"added on {event['date']} while a member since {opened.added}"
                    _fail_pairing(raw, ticker, problem, [event, previous])
                opened = _Interval(ticker, event["date"], None, event["position"], event["slot"])
            elif opened is not None:
                opened.removed = event["date"]
                intervals.append(opened)
                opened = None
            elif previous is not None:
                problem = (
                    f"removed on {event['date']} while not a member since its removal "
                    f"on {previous['date']}"
                )
                _fail_pairing(raw, ticker, problem, [event, previous])
            else:  # a member since before the file's coverage
                intervals.append(
                    _Interval(ticker, None, event["date"], event["position"], event["slot"])
                )
            previous = event
        if opened is not None:
            intervals.append(opened)
    return sorted(intervals, key=lambda interval: (interval.position, interval.slot))


def _fail_pairing(raw: LandingText, ticker: str, problem: str, events: list[dict]) -> None:
    offending = np.zeros(len(raw.rows), dtype=bool)
    offending[[event["position"] for event in events]] = True
    raw.fail_rows(
        offending,
        f"ticker {ticker} {problem} [rule: changes pair additions and removals in date order]",
        ["date", *_EVENT_COLUMNS],
    )
