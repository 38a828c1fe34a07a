"""Daily prices as traded, with the splits and dividends that shape them.

Each security follows a one-factor random walk of its split-adjusted value; splits divide the
traded price (and multiply shares outstanding), so the split-adjusted series stays continuous.
Each security draws from the stage's stream in turn, in the universe's order; its bars go
straight into the columns of ``PriceHistory``.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd

from findata.demo.price_history import BAR_COLUMNS, CorporateAction, PriceHistory
from findata.demo.universe import Security, Universe

_TRADING_DAYS = 252


def _split_schedule(
    rng: np.random.Generator, value: np.ndarray, force_at: int | None
) -> list[tuple[int, float]]:
    """Where splits fall: a forward split when the traded price runs high, a reverse split when
    it sinks below a dollar, at most one a year and none within 300 sessions of ``force_at``,
    where a 4-for-1 split falls whatever the price. Splits may fall on sessions 1 to n - 6.

    Found split by split (the next session whose traded price calls for one, searched in an
    array), not session by session: the same splits, drawn in the same order."""
    splits: list[tuple[int, float]] = []
    factor, last = 1.0, -_TRADING_DAYS
    threshold = float(rng.uniform(700, 1600))
    end = len(value) - 5
    forced = force_at if force_at is not None and 1 <= force_at < end else None
    start = 1
    while start < end:
        t = _next_priced_split(value, factor, threshold, max(start, last + _TRADING_DAYS), end)
        if force_at is not None and t is not None and abs(t - force_at) < 300:
            # the quiet window around the forced split: search again after it
            t = _next_priced_split(value, factor, threshold, force_at + 300, end)
        if forced is not None and (t is None or forced <= t):
            splits.append((forced, 4.0))
            factor *= 4.0
            last, start, forced = forced, forced + 1, None
            continue
        if t is None:
            break
        traded = value[t] / factor
        if traded > threshold:
            ratio = 4.0 if traded > 2 * threshold else float(rng.choice([2.0, 3.0]))
        else:
            ratio = 0.1
        splits.append((t, ratio))
        factor *= ratio
        last, start = t, t + 1
    return splits


def _next_priced_split(
    value: np.ndarray, factor: float, threshold: float, start: int, end: int
) -> int | None:
    """The first session of ``start:end`` whose traded price (``value / factor``) is above
    ``threshold`` or below a dollar."""
    if start >= end:
        return None
    traded = value[start:end] / factor
    hits = np.flatnonzero((traded > threshold) | (traded < 1.0))
    return None if len(hits) == 0 else start + int(hits[0])


def _simulate_security(
    rng: np.random.Generator,
    security: Security,
    days: list[dt.date],
    market: np.ndarray,
    force_split_at: int | None,
) -> tuple[dict[str, np.ndarray], list[CorporateAction]]:
    """One security's bars over ``days`` (a column each, ``BAR_COLUMNS``) and its actions."""
    n = len(days)
    sigma = float(rng.uniform(0.15, 0.55)) / np.sqrt(_TRADING_DAYS)
    beta = float(rng.uniform(0.6, 1.4))
    drift = float(rng.normal(0.01, 0.05)) / _TRADING_DAYS
    returns = beta * market + rng.normal(drift, sigma, n)
    returns[0] = 0.0
    value = float(rng.uniform(12, 160)) * np.exp(np.cumsum(returns))
    if force_split_at is not None:
        # a forced split falls on a high-priced stock, as real forward splits do
        value *= float(rng.uniform(450, 650)) / value[force_split_at]

    splits = _split_schedule(rng, value, force_split_at)
    factor = np.ones(n)
    for t, ratio in splits:
        factor[t:] *= ratio
    close = value / factor

    open_ = np.empty(n)
    open_[0] = close[0] * np.exp(rng.normal(0, sigma / 3))
    open_[1:] = close[:-1] * np.exp(rng.normal(0, sigma / 3, n - 1))
    # a split day opens on the new share basis
    for t, ratio in splits:
        open_[t] = close[t - 1] / ratio * np.exp(rng.normal(0, sigma / 3))
    high = np.maximum(open_, close) * (1 + np.abs(rng.normal(0, sigma / 2, n)))
    low = np.minimum(open_, close) * (1 - np.minimum(np.abs(rng.normal(0, sigma / 2, n)), 0.5))

    decimals = np.where(close < 1.0, 4, 2)
    open_, high, low, close = (
        np.round(x * 10.0**decimals) / 10.0**decimals for x in (open_, high, low, close)
    )
    high = np.maximum.reduce([high, open_, close])
    low = np.minimum.reduce([low, open_, close])

    years = np.arange(n) / _TRADING_DAYS
    shares = np.round(security.shares_outstanding * factor * (0.99**years) / 1000) * 1000
    volume = np.floor(shares * 0.004 * rng.lognormal(0, 0.5, n))

    bars = {
        "open": open_,
        "high": high,
        "low": low,
        "close": close,
        "volume": volume.astype("int64"),
        "shares_outstanding": shares.astype("int64"),
    }

    actions = [
        CorporateAction(
            security,
            "split",
            days[t],
            days[t] - dt.timedelta(days=int(rng.integers(14, 45))),
            ratio=ratio,
        )
        for t, ratio in splits
    ]
    if security.issuer.pays_dividends:
        quarterly_yield = float(rng.uniform(0.008, 0.035)) / 4
        for t in range(int(rng.integers(5, 60)), n - 1, 63):
            amount = round(float(close[t - 1]) * quarterly_yield, 4)
            if amount >= 0.01:
                ex_date = days[t]
                actions.append(
                    CorporateAction(
                        security,
                        "dividend",
                        ex_date,
                        ex_date - dt.timedelta(days=int(rng.integers(10, 30))),
                        amount=round(amount, 2),
                    )
                )
    return bars, actions


def _ticker_codes(security: Security, days: pd.DatetimeIndex, codes: dict[str, int]) -> np.ndarray:
    """``security.ticker_on`` for every day at once, as codes of ``codes`` (-1: no ticker; a new
    ticker gets the next code). The first period covering a day wins, so the periods are laid
    down last to first."""
    tickers = np.full(len(days), -1, dtype="int32")
    for period in reversed(security.tickers):
        start = days.searchsorted(pd.Timestamp(period.valid_from))
        stop = (
            len(days)
            if period.valid_to is None
            else days.searchsorted(pd.Timestamp(period.valid_to), side="right")
        )
        tickers[start:stop] = codes.setdefault(period.ticker, len(codes))
    return tickers


def simulate_prices(rng: np.random.Generator, universe: Universe) -> PriceHistory:
    """Daily bars for every security over its listed sessions, and its corporate actions."""
    sessions = universe.sessions
    market = rng.normal(0.0002, 0.01, len(sessions))
    plain = universe.special["plain"]
    securities = universe.securities
    spans = [
        (
            int(sessions.searchsorted(pd.Timestamp(security.listed))),
            len(sessions)
            if security.delisted is None
            else int(sessions.searchsorted(pd.Timestamp(security.delisted), side="right")),
        )
        for security in securities
    ]
    # every column allocated once and filled security by security (no frame: a pandas frame of
    # the large demo's 13.6 million bars, built and indexed, held them two to three times over)
    offsets = np.zeros(len(securities) + 1, dtype="int64")
    offsets[1:] = np.cumsum([stop - start for start, stop in spans])
    columns = {name: np.empty(offsets[-1], dtype=dtype) for name, dtype in BAR_COLUMNS.items()}
    ticker_codes = np.empty(offsets[-1], dtype="int32")
    codes: dict[str, int] = {}
    actions: list[CorporateAction] = []
    session_dates = list(sessions.date)
    for k, (security, (start, stop)) in enumerate(zip(securities, spans, strict=True)):
        days = session_dates[start:stop]
        force = len(days) - 180 if security is plain else None
        bars, security_actions = _simulate_security(rng, security, days, market[start:stop], force)
        rows = slice(offsets[k], offsets[k + 1])
        for name, values in bars.items():
            columns[name][rows] = values
        ticker_codes[rows] = _ticker_codes(security, sessions[start:stop], codes)
        actions.extend(security_actions)
    actions.sort(key=lambda a: (a.ex_date, a.security.entity_id, a.action))
    return PriceHistory(
        sessions=sessions,
        entity_ids=np.array([s.entity_id for s in securities], dtype="int64"),
        first_session=np.array([start for start, _ in spans], dtype="int64"),
        offsets=offsets,
        columns=columns,
        ticker_codes=ticker_codes,
        tickers=tuple(codes),
        actions=actions,
    )
