"""Raw-table contract: ``contracts/raw_tables.yaml``, the columns and DuckDB types of every raw
table landing is read into (``raw.<table>``), in order."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

RAW_TABLES_FILE = Path(__file__).parent / "raw_tables.yaml"

#: the DuckDB types raw columns have, in DuckDB's own spelling (``DESCRIBE``'s): the readers'
#: dates are ``TIMESTAMP_S`` (pandas ``datetime64[s]``); a new type is added here deliberately
RawType = Literal[
    "VARCHAR", "BIGINT", "DOUBLE", "BOOLEAN", "DATE", "TIMESTAMP_S", "TIMESTAMP WITH TIME ZONE"
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RawColumn(_Strict):
    """A raw column: its name and DuckDB type."""

    name: str
    type: RawType


class RawTablesContract(_Strict):
    """Every raw table's columns, in the order the table has them."""

    description: str
    tables: dict[str, list[RawColumn]] = Field(
        description="Raw table name to its columns, in order."
    )

    @field_validator("tables")
    @classmethod
    def _columns_named_once(cls, tables: dict[str, list[RawColumn]]) -> dict[str, list[RawColumn]]:
        for table, columns in tables.items():
            if not columns:
                raise ValueError(f"{table}: no columns")  # DuckDB has no table without any
            names = [c.name for c in columns]
            repeated = sorted({n for n in names if names.count(n) > 1})
            if repeated:
                raise ValueError(f"{table}: column(s) listed twice: {repeated}")
        return tables


@cache
def load_raw_tables_contract() -> RawTablesContract:
    """Load and validate ``contracts/raw_tables.yaml``."""
    raw = yaml.safe_load(RAW_TABLES_FILE.read_text(encoding="utf-8"))
    return RawTablesContract.model_validate(raw)


def raw_table_columns() -> dict[str, list[tuple[str, str]]]:
    """Each raw table's ``(column, DuckDB type)`` pairs, in the table's order (a new dict on
    each call, so a caller's change never reaches the cached contract)."""
    return {
        table: [(c.name, c.type) for c in columns]
        for table, columns in load_raw_tables_contract().tables.items()
    }
