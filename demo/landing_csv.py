"""The demo's CSV landing files, in the layouts of contracts/landing, byte-deterministic."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from findata.contracts.landing import load_landing_format
from findata.demo.indexes import Membership
from findata.demo.price_history import BAR_COLUMNS, PriceHistory
from findata.demo.universe import Universe

_ARROW_TYPES = {
    "string": pa.string(),
    "integer": pa.int64(),
    "number": pa.float64(),
    "date": pa.date32(),
}


def _contract_schema(format_name: str, names: Iterable[str]) -> pa.Schema:
    """The contract's columns among ``names``, in contract order, typed by the contract."""
    present = set(names)
    contract = load_landing_format(format_name)
    return pa.schema(
        [(c.name, _ARROW_TYPES[c.type]) for c in contract.columns if c.name in present]
    )


def _write_table(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pacsv.write_csv(table, path, pacsv.WriteOptions(quoting_style="needed"))


def write_contract_csv(frame: pd.DataFrame, format_name: str, path: Path) -> None:
    """Write ``frame`` with the contract's columns, in contract order, typed by the contract
    (numbers in their shortest round-trip form, dates YYYY-MM-DD, nulls empty)."""
    schema = _contract_schema(format_name, frame.columns)
    table = pa.Table.from_pandas(frame[schema.names], schema=schema, preserve_index=False)
    _write_table(table, path)


def write_prices(history: PriceHistory, folder: Path) -> list[Path]:
    """One price file per calendar year (``prices/prices_YYYY.csv``), sorted by entity and date.

    The years are written two at a time: Arrow writes a CSV without holding the GIL, and most
    of the time goes into turning numbers into text."""
    years = history.sessions.year.to_numpy()
    if len(years) == 0:
        return []
    bounds = [0, *(np.flatnonzero(np.diff(years)) + 1).tolist(), len(years)]
    spans = [(int(years[start]), start, stop) for start, stop in itertools.pairwise(bounds)]
    schema = _contract_schema("prices", ["entity_id", "ticker", "date", *BAR_COLUMNS])
    dates = pa.array(history.sessions.to_numpy()).cast(pa.date32())
    tickers = pa.array(history.tickers, type=pa.string())

    def write_year(year: int, start: int, stop: int) -> Path | None:
        securities, rows, sessions = history.rows_between(start, stop)
        if len(rows) == 0:
            return None
        codes = history.ticker_codes[rows]
        columns = {
            "entity_id": pa.array(history.entity_ids[securities]),
            "ticker": pa.DictionaryArray.from_arrays(
                pa.array(codes, mask=codes < 0), tickers
            ).dictionary_decode(),
            "date": dates.take(pa.array(sessions)),
            **{name: pa.array(values[rows]) for name, values in history.columns.items()},
        }
        table = pa.table([columns[f.name].cast(f.type) for f in schema], schema=schema)
        path = folder / f"prices_{year}.csv"
        _write_table(table, path)
        return path

    with ThreadPoolExecutor(max_workers=2) as pool:
        written = list(pool.map(lambda span: write_year(*span), spans))
    return [path for path in written if path is not None]


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
