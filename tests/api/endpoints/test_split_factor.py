"""One split factor through every endpoint that uses it, on the demo's ``split`` scenario.

The factor is computed once, by the pipeline (transforms/models/intermediate/
int_price_split_factors.sql), and published as the prices dataset's ``split_factor``. Over real
HTTP on the published small demo: ``/v1/prices`` divides by it for ``adj_close`` and for
``adjust=split`` (daily and in buckets), and ``/v1/metrics`` restates the EPS of earlier periods
(as ``/v1/fundamentals`` serves them, as reported) onto a period end's share basis with the same
factors for ``eps_ttm`` and ``pe_ratio``. The factors are read from the served prices
(close / adj_close), never from the scenario's ratio, which checks them.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
from bisect import bisect_right
from typing import Any

import pytest

from tests.api.endpoints.api_calls import get, ok_body, query_published, walk_cursor_rows
from tests.api.server import RunningApi

Row = dict[str, Any]


def _day(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


@pytest.fixture(scope="module")
def split_prices(api: RunningApi, pro_key: str, scenarios: dict) -> tuple[list[Row], list[Row]]:
    """Every bar of the split scenario's security, as traded and with ``adjust=split``."""
    path = f"/v1/prices/{scenarios['split']['ticker']}"
    raw = walk_cursor_rows(api, pro_key, path, limit=5000)
    adjusted = walk_cursor_rows(api, pro_key, path, limit=5000, adjust="split")
    assert raw and [r["date"] for r in raw] == [r["date"] for r in adjusted]
    assert len({r["entity_id"] for r in raw}) == 1
    return raw, adjusted


def _factor(bar: Row) -> float:
    """The split factor a served bar was adjusted with: close / adj_close."""
    return bar["close"] / bar["adj_close"]


def test_adj_close_and_adjust_split_divide_by_the_published_factor(
    api: RunningApi, split_prices: tuple[list[Row], list[Row]]
) -> None:
    raw, adjusted = split_prices
    published = query_published(
        api,
        "SELECT date, close, split_ratio, split_factor FROM prices "
        "WHERE entity_id = $entity ORDER BY date",
        entity=raw[0]["entity_id"],
    )
    assert [row["date"].isoformat() for row in published] == [bar["date"] for bar in raw]
    later = 1.0  # the product of the ratios of the splits after each bar, latest bar first
    for row, bar, restated in zip(
        reversed(published), reversed(raw), reversed(adjusted), strict=True
    ):
        assert row["split_factor"] == pytest.approx(later, rel=1e-12)
        later *= row["split_ratio"]
        # the pipeline's adj_close and the API's adjust=split: the same division, to the bit
        assert bar["adj_close"] == row["close"] / row["split_factor"]
        assert restated["close"] == bar["adj_close"]
        assert restated["adj_close"] == bar["adj_close"]
        for name in ("open", "high", "low"):
            assert restated[name] == bar[name] / row["split_factor"]
        # ROUND in SQL: half away from zero
        assert restated["volume"] == math.floor(bar["volume"] * row["split_factor"] + 0.5)
    # today's share basis is the last bar's
    assert raw[-1]["adj_close"] == raw[-1]["close"]


def test_the_factor_steps_by_the_scenario_ratio_on_the_split_day_alone(
    scenarios: dict, split_prices: tuple[list[Row], list[Row]]
) -> None:
    split = scenarios["split"]
    raw, _ = split_prices
    at = next(i for i, bar in enumerate(raw) if bar["date"] == split["date"])
    assert raw[at]["split_ratio"] == split["ratio"]
    assert _factor(raw[at - 1]) / _factor(raw[at]) == pytest.approx(split["ratio"], rel=1e-12)
    for before, bar in itertools.pairwise(raw):
        # from one bar to the next the factor changes by that day's split ratio, and only then
        assert _factor(before) / _factor(bar) == pytest.approx(bar["split_ratio"], rel=1e-12)


def test_a_weekly_bucket_across_the_split_is_restated_with_the_same_factor(
    api: RunningApi, pro_key: str, scenarios: dict, split_prices: tuple[list[Row], list[Row]]
) -> None:
    split = scenarios["split"]
    raw, adjusted = split_prices
    day = _day(split["date"])
    window = {
        "start": (day - dt.timedelta(days=14)).isoformat(),
        "end": (day + dt.timedelta(days=14)).isoformat(),
    }
    path = f"/v1/prices/{split['ticker']}"
    weeks = ok_body(get(api, pro_key, path, interval="1w", adjust="split", **window))["data"]
    by_date = {bar["date"]: bar for bar in adjusted}
    # buckets are dated by their last trading day: the first one on or after the split holds it
    week = next(w for w in weeks if w["date"] >= split["date"])
    days = [bar for bar in adjusted if week["date"] >= bar["date"] > _monday_before(week)]
    assert split["date"] in {bar["date"] for bar in days}
    assert week["split_ratio"] == split["ratio"]
    # the bucket's first open and last close, restated as the daily rows are (the last close is
    # that day's adj_close), and its volume the sum of the restated volumes
    assert week["open"] == days[0]["open"]
    assert week["close"] == by_date[week["date"]]["close"] == by_date[week["date"]]["adj_close"]
    assert week["volume"] == sum(bar["volume"] for bar in days)
    assert {bar["date"] for bar in raw} >= {bar["date"] for bar in days}


def _monday_before(week: Row) -> str:
    """The day before the Monday of a weekly bucket's week (ISO)."""
    last = _day(week["date"])
    return (last - dt.timedelta(days=last.weekday() + 1)).isoformat()


def _latest_known(filings: list[Row], known_on: str, own_accession: str) -> dict[tuple, Row]:
    """Per period, the filing known on ``known_on`` that the trailing figures read: the
    latest filed, the row's own filing winning a tie on the date, then the higher accession."""
    chosen: dict[tuple[str, str], Row] = {}
    for row in filings:
        if row["known_from"] > known_on:
            continue
        key = (row["period_end"], row["period_type"])
        rank = (row["known_from"], row["accession"] == own_accession, row["accession"])
        held = chosen.get(key)
        if held is None or rank > (
            held["known_from"],
            held["accession"] == own_accession,
            held["accession"],
        ):
            chosen[key] = row
    return chosen


def _statement(row: Row) -> tuple[str, str, str]:
    """A fundamentals or metrics row's statement: its period and filing."""
    return row["period_end"], row["period_type"], row["accession"]


def _eps(row: Row) -> float | None:
    return row["eps_diluted"] if row["eps_diluted"] is not None else row["eps_basic"]


def _trailing_eps(known: dict[tuple, Row], period_end: str, factor: Any) -> float | None:
    """Trailing-twelve-month EPS at a quarter's end from the EPS as reported, each period's put
    on the period end's share basis by ``factor(period_end) / factor(other period end)``
    (contracts/datasets/metrics.yaml, int_fundamentals_trailing.sql): four quarters when all are
    known, else the last annual EPS plus each later quarter less the same quarter a year
    earlier."""
    end = _day(period_end)

    def on_basis(row: Row) -> float | None:
        eps = _eps(row)
        return None if eps is None else eps * factor(end) / factor(_day(row["period_end"]))

    def days_before(row: Row) -> int:
        return (end - _day(row["period_end"])).days

    quarters = {
        row["period_end"]: row
        for (_, kind), row in known.items()
        if kind == "quarterly" and 0 <= days_before(row) < 355
    }
    values = [on_basis(q) for q in quarters.values()]
    if len(values) == 4 and None not in values:
        return math.fsum(values)  # type: ignore[arg-type]
    annuals = [
        r for (_, kind), r in known.items() if kind == "annual" and 0 <= days_before(r) < 355
    ]
    if not annuals:
        return None
    anchor = max(annuals, key=lambda r: r["period_end"])
    total = on_basis(anchor)
    since = [q for p, q in sorted(quarters.items()) if p > anchor["period_end"]]
    quarters_since = round((end - _day(anchor["period_end"])).days / 91.31)
    if total is None or len(since) != quarters_since:
        return None
    earlier = {row["period_end"]: row for (_, kind), row in known.items() if kind == "quarterly"}
    for quarter in since:
        q_end = _day(quarter["period_end"])
        matches = [r for p, r in earlier.items() if 355 <= (q_end - _day(p)).days <= 375]
        if not matches:
            return None
        year_earlier = min(matches, key=lambda r: abs((q_end - _day(r["period_end"])).days - 365))
        now, then = on_basis(quarter), on_basis(year_earlier)
        if now is None or then is None:
            return None
        total += now - then
    return total


def test_metrics_restate_the_reported_eps_with_the_prices_factors(
    api: RunningApi, pro_key: str, scenarios: dict, split_prices: tuple[list[Row], list[Row]]
) -> None:
    split = scenarios["split"]
    ticker = split["ticker"]
    raw, _ = split_prices
    dates = [_day(bar["date"]) for bar in raw]

    def factor(day: dt.date) -> float:
        """The prices' split factor at a day: its last bar's, on or before it (before the
        first bar: every split's, the first bar's own ratio included)."""
        at = bisect_right(dates, day) - 1
        return _factor(raw[at]) if at >= 0 else _factor(raw[0]) * raw[0]["split_ratio"]

    filings = walk_cursor_rows(
        api,
        pro_key,
        f"/v1/fundamentals/{ticker}",
        view="as_reported",
        fields="eps_basic,eps_diluted",
        limit=1000,
    )
    metrics = walk_cursor_rows(
        api,
        pro_key,
        f"/v1/metrics/{ticker}",
        fields="eps,eps_ttm,price_entity_id,price_close,pe_ratio",
        limit=100,
    )
    # the company's price fields are those of the security whose bars were read above
    assert {m["price_entity_id"] for m in metrics} <= {raw[0]["entity_id"], None}
    checked, across_a_split = 0, 0
    for row in metrics:
        (own,) = [f for f in filings if _statement(f) == _statement(row)]
        # the period's own EPS is served as reported, on no other basis
        assert row["eps"] == _eps(own)
        if row["period_type"] != "quarterly" or row["eps_ttm"] is None:
            continue
        known = _latest_known(filings, row["filing_date"], row["accession"])
        expected = _trailing_eps(known, row["period_end"], factor)
        assert expected is not None, row
        assert row["eps_ttm"] == pytest.approx(expected, rel=1e-9, abs=1e-12), row
        if row["eps_ttm"] > 0 and row["price_close"] is not None:
            assert row["pe_ratio"] == pytest.approx(row["price_close"] / row["eps_ttm"])
        checked += 1
        end = _day(row["period_end"])
        across_a_split += any(
            factor(_day(p)) != factor(end) for p, _ in known if 0 < (end - _day(p)).days < 740
        )
    assert checked >= 4 and across_a_split >= 1
    # the first quarter after the scenario's split reads earlier quarters divided by its ratio
    day = _day(split["date"])
    first_after = min(
        (m for m in metrics if m["period_type"] == "quarterly" and _day(m["period_end"]) > day),
        key=lambda m: m["period_end"],
    )
    before = max(d for d in dates if d < day)
    assert factor(before) / factor(_day(first_after["period_end"])) == pytest.approx(split["ratio"])
