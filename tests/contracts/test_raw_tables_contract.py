"""The raw tables' contract (``contracts/raw_tables.yaml``) loads, spells its types as DuckDB
does, and refuses an inconsistent file."""

from __future__ import annotations

import typing
from typing import Any

import duckdb
import pytest
import yaml
from pydantic import ValidationError

from findata.contracts.raw_tables import (
    RAW_TABLES_FILE,
    RawTablesContract,
    RawType,
    load_raw_tables_contract,
    raw_table_columns,
)


def _raw() -> dict[str, Any]:
    return yaml.safe_load(RAW_TABLES_FILE.read_text(encoding="utf-8"))


@pytest.mark.parametrize("kind", typing.get_args(RawType))
def test_each_type_is_spelled_as_duckdb_describes_it(kind: str) -> None:
    # the contract is compared with DESCRIBE's types: an alias (INT8, TEXT) would never match
    assert duckdb.sql(f"SELECT typeof(CAST(NULL AS {kind}))").fetchall() == [(kind,)]


def test_the_columns_are_the_contract_file_s_in_order() -> None:
    columns = raw_table_columns()
    assert list(columns) == list(_raw()["tables"])
    assert columns["prices"][:3] == [
        ("entity_id", "BIGINT"),
        ("ticker", "VARCHAR"),
        ("date", "TIMESTAMP_S"),
    ]
    columns["prices"].clear()  # a caller's copy: the cached contract keeps its columns
    assert raw_table_columns()["prices"] == [
        (c.name, c.type) for c in load_raw_tables_contract().tables["prices"]
    ]


def test_a_column_listed_twice_is_refused() -> None:
    raw = _raw()
    raw["tables"]["prices"].append({"name": "ticker", "type": "VARCHAR"})
    with pytest.raises(ValidationError, match="prices: column\\(s\\) listed twice: \\['ticker'\\]"):
        RawTablesContract.model_validate(raw)


@pytest.mark.parametrize(
    "change",
    [
        lambda raw: raw["tables"]["prices"].append({"name": "vwap", "type": "FLOAT8"}),
        lambda raw: raw["tables"]["prices"][0].update(nullable=False),
        lambda raw: raw["tables"].update(prices=[]),
    ],
    ids=["an unknown type", "an unknown key", "a table without columns"],
)
def test_an_inconsistent_contract_is_refused(change: Any) -> None:
    raw = _raw()
    change(raw)
    with pytest.raises(ValidationError):
        RawTablesContract.model_validate(raw)
