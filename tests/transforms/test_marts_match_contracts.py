"""Every published dataset's mart has exactly its contract's columns, in order, with its types."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from findata.contracts.datasets import dataset_names, load_dataset_contract


@pytest.mark.parametrize("name", dataset_names())
def test_mart_columns_and_types_are_the_contracts(small_warehouse: Path, name: str) -> None:
    contract = load_dataset_contract(name)
    with duckdb.connect(str(small_warehouse), read_only=True) as con:
        columns = con.execute(
            "select column_name, data_type from information_schema.columns "
            "where table_schema = 'marts' and table_name = ? order by ordinal_position",
            [name],
        ).fetchall()
        assert columns, f"no mart marts.{name}"
        assert columns == [(c.name, c.type) for c in contract.columns]
        rows = con.execute(f'select count(*) from marts."{name}"').fetchall()[0][0]
    assert rows > 0, f"marts.{name} is empty on the small demo"


@pytest.mark.parametrize("name", dataset_names())
def test_contract_key_is_unique_and_not_null(small_warehouse: Path, name: str) -> None:
    contract = load_dataset_contract(name)
    key = ", ".join(f'"{c}"' for c in contract.key)
    nulls = " or ".join(f'"{c}" is null' for c in contract.key)
    with duckdb.connect(str(small_warehouse), read_only=True) as con:
        duplicates = con.execute(
            f'select count(*) from (select {key} from marts."{name}" group by {key} '
            "having count(*) > 1)"
        ).fetchall()[0][0]
        missing = con.execute(f'select count(*) from marts."{name}" where {nulls}').fetchall()[0][0]
    assert (duplicates, missing) == (0, 0)
