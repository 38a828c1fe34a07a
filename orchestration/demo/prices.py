"""Daily prices as traded, with the splits and dividends that shape them.

Each security follows a one-factor random walk of its split-adjusted value; splits divide the
traded price (and multiply shares outstanding), so the split-adjusted series stays continuous.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
import pandas as pd

from findata.orchestration.demo.universe import Security, Universe

_TRADING_DAYS = 252
#: the columns ``_simulate_security`` returns, in the order of ``PriceHistory.prices``
_BAR_COLUMNS = {
    "ticker": object,
    "open": "float64",
    "high": "float64",
    "low": "float64",
    "close": "float64",
    "volume": "int64",
    "shares_outstanding": "int64",
}


@dataclass(frozen=True)
class CorporateAction:
    """A split (``ratio`` new shares per old share) or a cash dividend (``amount`` USD/share)."""

    security: Security
    action: str
    ex_date: dt.date
    announced: dt.date
    ratio: float | None = None
    amount: float | None = None


@dataclass(frozen=True)
class _Series:
    """One security's dates, closes and shares outstanding as arrays, for fast lookups."""

    dates: np.ndarray  # datetime64[s], ascending
    close: np.ndarray
    shares: np.ndarray

    def position(self, day: dt.date) -> int:
        """Index of the last session on or before ``day`` (-1 when before the first)."""
        return int(np.searchsorted(self.dates, np.datetime64(day, "s"), side="right")) - 1


@dataclass
class PriceHistory:
    """Every price row and corporate action of the universe."""

    #: entity_id, ticker, date, open, high, low, close, volume, shares_outstanding
    prices: pd.DataFrame
    actions: list[CorporateAction]

    def __post_init__(self) -> None:
        self._values_cache: dict[dt.date, dict[int, float]] = {}
        self._rows_by_date: dict[pd.Timestamp, np.ndarray] | None = None
        self._series = {
            int(key): _Series(
                frame["date"].to_numpy(dtype="datetime64[s]"),
                frame["close"].to_numpy(),
                frame["shares_outstanding"].to_numpy(),
            )
            for key, frame in self.prices.groupby("entity_id", sort=False)
        }

    def market_values(self, day: dt.date) -> dict[int, float]:
        """Close times shares outstanding of every security that traded on ``day``."""
        if day not in self._values_cache:
            if self._rows_by_date is None:
                # row positions per date, found once (filtering the frame per day is slow)
                self._rows_by_date = self.prices.groupby("date", sort=False).indices
            rows = self.prices.iloc[self._rows_by_date.get(pd.Timestamp(day), [])]
            value = rows["close"].to_numpy() * rows["shares_outstanding"].to_numpy()
            self._values_cache[day] = dict(
                zip(rows["entity_id"].astype(int).tolist(), value.tolist(), strict=True)
            )
        return self._values_cache[day]

    def close_on(self, entity_id: int, day: dt.date) -> float | None:
        """The security's close on the last session on or before ``day``."""
        series = self._series.get(entity_id)
        position = -1 if series is None else series.position(day)
        return None if position < 0 else float(series.close[position])

    def traded_on(self, entity_id: int, day: dt.date) -> bool:
        """The security has a bar on ``day``."""
        series = self._series.get(entity_id)
        if series is None:
            return False
        position = series.position(day)
        return position >= 0 and series.dates[position] == np.datetime64(day, "s")

    def first_bar(self, entity_id: int) -> dt.date | None:
        """The date of the security's first bar (None without prices)."""
        series = self._series.get(entity_id)
        return None if series is None else _to_date(series.dates[0])

    def last_bar(self, entity_id: int) -> dt.date | None:
        """The date of the security's last bar (None without prices)."""
        series = self._series.get(entity_id)
        return None if series is None else _to_date(series.dates[-1])

    def shares_on(self, entity_id: int, day: dt.date) -> float | None:
        """Shares outstanding on the last session on or before ``day`` (the first session's
        count when ``day`` comes before it; None without prices)."""
        series = self._series.get(entity_id)
        if series is None:
            return None
        return float(series.shares[max(series.position(day), 0)])


def _to_date(value: np.datetime64) -> dt.date:
    return value.astype("datetime64[D]").item()


def _split_schedule(
    rng: np.random.Generator, value: np.ndarray, force_at: int | None
) -> list[tuple[int, float]]:
    """Where splits fall: a forward split when the traded price runs high, a reverse split when
    it sinks below a dollar, at most one a year; ``force_at`` adds a 4-for-1 split there."""
    splits: list[tuple[int, float]] = []
    factor, last = 1.0, -_TRADING_DAYS
    threshold = float(rng.uniform(700, 1600))
    for t in range(1, len(value) - 5):
        if force_at is not None and t == force_at:
            splits.append((t, 4.0))
            factor *= 4.0
            last = t
            continue
        if t - last < _TRADING_DAYS or (force_at is not None and abs(t - force_at) < 300):
            continue
        traded = value[t] / factor
        if traded > threshold:
            ratio = 4.0 if traded > 2 * threshold else float(rng.choice([2.0, 3.0]))
        elif traded < 1.0:
            ratio = 0.1
        else:
            continue
        splits.append((t, ratio))
        factor *= ratio
        last = t
    return splits


def _simulate_security(
    rng: np.random.Generator,
    security: Security,
    days: pd.DatetimeIndex,
    market: np.ndarray,
    force_split_at: int | None,
) -> tuple[dict[str, np.ndarray], list[CorporateAction]]:
    """One security's bars over ``days`` (a column each, ``_BAR_COLUMNS``) and its actions."""
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
        "ticker": _tickers_by_day(security, days),
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
            days[t].date(),
            days[t].date() - dt.timedelta(days=int(rng.integers(14, 45))),
            ratio=ratio,
        )
        for t, ratio in splits
    ]
    if security.issuer.pays_dividends:
        quarterly_yield = float(rng.uniform(0.008, 0.035)) / 4
        for t in range(int(rng.integers(5, 60)), n - 1, 63):
            amount = round(float(close[t - 1]) * quarterly_yield, 4)
            if amount >= 0.01:
                ex_date = days[t].date()
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


def _tickers_by_day(security: Security, days: pd.DatetimeIndex) -> np.ndarray:
    """``security.ticker_on`` for every day at once (the first period covering a day wins, so
    the periods are laid down last to first)."""
    tickers = np.full(len(days), None, dtype=object)
    for period in reversed(security.tickers):
        covered = days >= pd.Timestamp(period.valid_from)
        if period.valid_to is not None:
            covered &= days <= pd.Timestamp(period.valid_to)
        tickers[covered] = period.ticker
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
    # every column allocated once and filled security by security: a frame per security and a
    # concat of them held the large demo's 15 million rows twice, and cost more than drawing them
    rows = sum(stop - start for start, stop in spans)
    columns = {name: np.empty(rows, dtype=dtype) for name, dtype in _BAR_COLUMNS.items()}
    entity_ids = np.empty(rows, dtype="int64")
    session_positions = np.empty(rows, dtype="int64")
    actions: list[CorporateAction] = []
    row = 0
    for security, (start, stop) in zip(securities, spans, strict=True):
        days = sessions[start:stop]
        force = len(days) - 180 if security is plain else None
        bars, security_actions = _simulate_security(rng, security, days, market[start:stop], force)
        end = row + len(days)
        entity_ids[row:end] = security.entity_id
        session_positions[row:end] = np.arange(start, stop)
        for name, values in bars.items():
            columns[name][row:end] = values
        row = end
        actions.extend(security_actions)
    prices = pd.DataFrame(
        {
            "entity_id": entity_ids,
            "ticker": columns.pop("ticker"),
            "date": sessions[session_positions],
            **columns,
        }
    )
    actions.sort(key=lambda a: (a.ex_date, a.security.entity_id, a.action))
    return PriceHistory(prices=prices, actions=actions)
