"""Which companies a fetch covers: all of them, or those named by CIK, ticker or exchange.

Tickers and exchanges are looked up in the SEC's company list (``company_tickers_exchange.json``:
``{"fields": ["cik", "name", "ticker", "exchange"], "data": [[320193, "Apple Inc.", "AAPL",
"Nasdaq"], ...]}``); a company with several listed classes has a row per ticker.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from findata.sources.readers.sec_company_tickers import read_company_list_rows


@dataclass(frozen=True)
class ListedTicker:
    """A row of the SEC's company list."""

    cik: int
    name: str
    ticker: str
    exchange: str | None


@dataclass(frozen=True)
class Universe:
    """The CIKs a fetch covers (None: every company), and the tickers it could not find."""

    ciks: frozenset[int] | None
    unknown_tickers: tuple[str, ...] = ()

    def covers(self, cik: int) -> bool:
        """Whether ``cik`` is in the universe."""
        return self.ciks is None or cik in self.ciks


def read_company_list(path: Path) -> list[ListedTicker]:
    """The rows of a ``company_tickers_exchange.json``."""
    return [ListedTicker(**row) for row in read_company_list_rows(path)]


def choose_universe(
    listed: list[ListedTicker] | None,
    *,
    ciks: frozenset[int] = frozenset(),
    tickers: frozenset[str] = frozenset(),
    exchanges: frozenset[str] = frozenset(),
) -> Universe:
    """The universe named by ``ciks``, ``tickers`` (case-insensitive; ``BRK.B`` and ``BRK-B``
    alike) and ``exchanges`` together; every company when none is given."""
    if not (ciks or tickers or exchanges):
        return Universe(None)
    chosen = set(ciks)
    rows = listed or []
    by_ticker = {_ticker_key(row.ticker): row.cik for row in rows}
    wanted = {_ticker_key(t): t for t in tickers}
    chosen |= {by_ticker[key] for key in wanted if key in by_ticker}
    lowered = {e.lower() for e in exchanges}
    chosen |= {row.cik for row in rows if row.exchange and row.exchange.lower() in lowered}
    unknown = tuple(sorted(t for key, t in wanted.items() if key not in by_ticker))
    return Universe(frozenset(chosen), unknown)


def _ticker_key(ticker: str) -> str:
    return ticker.strip().upper().replace(".", "-")
