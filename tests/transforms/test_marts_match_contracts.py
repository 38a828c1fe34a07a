"""Every published dataset's mart has exactly its contract's columns, in order, with its types;
its dbt tests add to its contract's rules, never restate them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

from findata.contracts.datasets import dataset_names, load_dataset_contract

MARTS = Path(__file__).resolve().parents[2] / "transforms" / "models" / "marts"


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


def _data_tests(tests: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """A ``data_tests`` list as (test name, arguments)."""
    named = [(t, {}) if isinstance(t, str) else next(iter(t.items())) for t in tests]
    return [(name, (args or {}).get("arguments", args or {})) for name, args in named]


@pytest.mark.parametrize("name", dataset_names())
def test_no_dbt_test_of_a_mart_restates_its_contract(name: str) -> None:
    """The contract checks apply the key, the not-null columns and the allowed values of
    ``contracts/datasets/<name>.yaml``; a dbt test saying the same again would run the same
    check twice on every build (and drift from the contract when it changes)."""
    contract = load_dataset_contract(name)
    required = {c.name for c in contract.columns if not c.nullable} | set(contract.key)
    allowed = {column: sorted(map(str, v)) for column, v in contract.checks.allowed.items()}
    (model,) = [
        model
        for path in sorted(MARTS.glob("*.yml"))
        for model in yaml.safe_load(path.read_text())["models"]
        if model["name"] == name
    ]
    restated = [
        f"{test} of the key"
        for test, args in _data_tests(model.get("data_tests", []))
        if test == "unique_combination_of_columns"
        and sorted(args["columns"]) == sorted(contract.key)
    ]
    for column in model.get("columns", []):
        for test, args in _data_tests(column.get("data_tests", [])):
            if (
                (test == "not_null" and column["name"] in required)
                or (test == "unique" and list(contract.key) == [column["name"]])
                or (
                    test == "accepted_values"
                    and sorted(map(str, args["values"])) == allowed.get(column["name"])
                )
            ):
                restated.append(f"{test} of {column['name']}")
    assert restated == [], f"marts/{name}: dbt tests restating the contract: {restated}"
