"""The demo's CSV landing files, in the layouts of contracts/landing, byte-deterministic."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from findata.contracts.landing import load_landing_format
from findata.orchestration.demo.indexes import Membership
from findata.orchestration.demo.prices import PriceHistory
from findata.orchestration.demo.universe import Universe

_ARROW_TYPES = {
    "string": pa.string(),
    "integer": pa.int64(),
    "number": pa.float64(),
    "date": pa.date32(),
}


def write_contract_csv(frame: pd.DataFrame, format_name: str, path: Path) -> None:
    """Write ``frame`` with the contract's columns, in contract order, typed by the contract
    (numbers in their shortest round-trip form, dates YYYY-MM-DD, nulls empty)."""
    contract = load_landing_format(format_name)
    columns = [c for c in contract.columns if c.name in frame.columns]
    schema = pa.schema([(c.name, _ARROW_TYPES[c.type]) for c in columns])
    table = pa.Table.from_pandas(
        frame[[c.name for c in columns]], schema=schema, preserve_index=False
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    pacsv.write_csv(table, path, pacsv.WriteOptions(quoting_style="needed"))


def write_prices(history: PriceHistory, folder: Path) -> list[Path]:
    """One price file per calendar year (``prices/prices_YYYY.csv``), sorted by entity and date."""
    prices = history.prices
    if not _sorted_by_entity_and_date(prices):
        prices = prices.sort_values(["entity_id", "date"], kind="stable")
    # the rows of each year in frame order, found with one stable sort by year (grouping the
    # large demo's 15 million rows by year and copying each group cost seconds)
    if prices.empty:
        return []
    years = prices["date"].dt.year.to_numpy()
    order = np.argsort(years, kind="stable")
    bounds = np.flatnonzero(np.diff(years[order])) + 1
    written = []
    for positions in np.split(order, bounds):
        rows = prices.take(positions)
        year = int(years[positions[0]])
        # dates as Arrow dates straight from the timestamps, not one Python date per row
        dates = pa.array(rows["date"].to_numpy()).cast(pa.date32())
        frame = rows.assign(date=pd.arrays.ArrowExtensionArray(dates))
        path = folder / f"prices_{year}.csv"
        write_contract_csv(frame, "prices", path)
        written.append(path)
    return written


def _sorted_by_entity_and_date(prices: pd.DataFrame) -> bool:
    """The rows are in (entity_id, date) order already, as ``simulate_prices`` lays them down."""
    entity = prices["entity_id"].to_numpy()
    date = prices["date"].to_numpy()
    same = entity[1:] == entity[:-1]
    return bool(np.all((entity[1:] > entity[:-1]) | (same & (date[1:] >= date[:-1]))))


def write_corporate_actions(history: PriceHistory, path: Path) -> None:
    """Every split and dividend."""
    frame = pd.DataFrame(
        {
            "entity_id": [a.security.entity_id for a in history.actions],
            "ticker": [a.security.ticker_on(a.ex_date) for a in history.actions],
            "action": [a.action for a in history.actions],
            "ex_date": [a.ex_date for a in history.actions],
            "announced": [a.announced for a in history.actions],
            "ratio": [a.ratio for a in history.actions],
            "amount": [a.amount for a in history.actions],
        }
    )
    write_contract_csv(frame, "corporate_actions", path)


def write_security_master(universe: Universe, path: Path) -> None:
    """One row per entity and ticker period: securities, and issuer rows of issuer tickers."""
    rows = []
    for issuer in universe.issuers:
        common = {
            "issuer_entity_id": issuer.entity_id,
            "issuer_name": issuer.name,
            "cik": issuer.cik,
            "country": "US",
            "gics_sector": issuer.sector,
            "gics_group": issuer.group,
            "naics_code": issuer.naics,
        }
        for security in issuer.securities:
            for period in security.tickers:
                rows.append(
                    {
                        **common,
                        "entity_id": security.entity_id,
                        "entity_grain": "security",
                        "figi": security.figi,
                        "cusip": security.cusip,
                        "ticker": period.ticker,
                        "exchange": security.exchange,
                        "share_class": security.share_class,
                        "instrument_type": "common",
                        "valid_from": period.valid_from,
                        "valid_to": period.valid_to,
                    }
                )
        for period in issuer.issuer_tickers:
            rows.append(
                {
                    **common,
                    "entity_id": issuer.entity_id,
                    "entity_grain": "issuer",
                    "ticker": period.ticker,
                    "valid_from": period.valid_from,
                    "valid_to": period.valid_to,
                }
            )
    frame = pd.DataFrame(rows).sort_values(["entity_id", "valid_from", "ticker"], kind="stable")
    write_contract_csv(frame, "security_master", path)


def write_index_membership(members: list[Membership], path: Path) -> None:
    """One row per membership interval; the ticker is the member's own ticker when added."""
    frame = pd.DataFrame(
        {
            "index": [m.index for m in members],
            "entity_id": [m.security.entity_id for m in members],
            "ticker": [m.security.ticker_on(m.added) for m in members],
            "added": [m.added for m in members],
            "removed": [m.removed for m in members],
        }
    )
    write_contract_csv(frame, "index_membership", path)
