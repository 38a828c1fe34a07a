"""Run every dataset contract on the marts of a DuckDB file (opened read-only)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import duckdb

from findata.contracts.datasets import DatasetContract, dataset_names, load_dataset_contract
from findata.orchestration.checks.changed_rows import check_changed_rows
from findata.orchestration.checks.frames import quote, read_frame
from findata.orchestration.checks.partitioned import check_partitioned
from findata.orchestration.checks.results import ContractCheckResult, ContractFailure
from findata.orchestration.checks.unchanged import VersionComparison
from findata.orchestration.checks.validate import check_dataset

FULL_CHECK_MAX_ROWS = 2_000_000
"""Marts up to this many rows are validated whole, in one pandas frame."""

SAMPLE_ROWS = 500_000
"""Rows (about) in the sample a larger mart's row-wise expectations run on."""

SAMPLE_SEED = 20_240_101
"""Fixed seed: the same mart gives the same sample."""

CATALOGUE_TYPE_CHECK = "duckdb_column_type"
"""The failure name of the catalogue check (DuckDB's own type differs from the contract's)."""


def catalogue_type_failures(
    contract: DatasetContract, catalogue: list[tuple[str, str]]
) -> tuple[ContractFailure, ...]:
    """Columns whose DuckDB type (from ``information_schema``) is not the contract's.

    A pandas frame cannot tell DATE from TIMESTAMP or DECIMAL from DOUBLE; the catalogue can.
    Missing or extra columns are left to the GE column-list expectation.
    """
    actual = dict(catalogue)
    return tuple(
        ContractFailure(
            expectation=CATALOGUE_TYPE_CHECK,
            columns=(c.name,),
            summary=f"DuckDB type {actual[c.name]}; contract {c.type}",
            rule="type",
        )
        for c in contract.columns
        if c.name in actual and actual[c.name] != c.type
    )


def check_mart(
    con: duckdb.DuckDBPyConnection,
    schema: str,
    contract: DatasetContract,
    *,
    today: dt.date,
    previous_rows: int | None,
    compared_with: VersionComparison | None = None,
    full_check_max_rows: int = FULL_CHECK_MAX_ROWS,
    sample_rows: int = SAMPLE_ROWS,
) -> ContractCheckResult:
    """Check ``<schema>.<contract.name>``: whole if small enough, else exact slices + sample;
    where it differs from a published version (``compared_with``:
    ``unchanged.compare_with_version``) when given and the mart has the contract's columns
    (``changed_rows.py``)."""
    relation = f"{quote(schema)}.{quote(contract.name)}"
    catalogue = con.execute(
        "select column_name, data_type from information_schema.columns "
        "where table_schema = ? and table_name = ? order by ordinal_position",
        [schema, contract.name],
    ).fetchall()
    ((row_count,),) = con.execute(f"select count(*) from {relation}").fetchall()
    if compared_with is not None and [c for c, _ in catalogue] == contract.column_names:
        result = check_changed_rows(
            con, schema, contract, compared_with, today=today, previous_rows=previous_rows
        )
    elif row_count <= full_check_max_rows:
        result = check_dataset(
            read_frame(con, f"select * from {relation}"),
            contract,
            today=today,
            previous_rows=previous_rows,
            asset_name=f"{schema}.{contract.name}",
        )
    else:
        result = check_partitioned(
            con,
            schema,
            contract,
            today=today,
            previous_rows=previous_rows,
            row_count=row_count,
            sample_rows=sample_rows,
            seed=SAMPLE_SEED,
        )
    extra = catalogue_type_failures(contract, catalogue)
    if extra:
        result = dataclasses.replace(result, success=False, failures=result.failures + extra)
    return result


def run_contract_checks(
    database: Path,
    schema: str,
    *,
    today: dt.date,
    previous_counts: dict[str, int],
    full_check_max_rows: int = FULL_CHECK_MAX_ROWS,
    sample_rows: int = SAMPLE_ROWS,
) -> list[ContractCheckResult]:
    """Check every dataset that has a contract and a table or view ``<schema>.<name>``.

    ``previous_counts`` maps a dataset to its row count in the previous published version (a
    dataset absent from it has no previous version, so no row-count rule). Results come in
    dataset-name order.
    """
    with duckdb.connect(str(database), read_only=True) as con:
        con.execute("set enable_progress_bar = false")
        return [
            check_mart(
                con,
                schema,
                load_dataset_contract(name),
                today=today,
                previous_rows=previous_counts.get(name),
                full_check_max_rows=full_check_max_rows,
                sample_rows=sample_rows,
            )
            for name in contracted_marts(con, schema)
        ]


def contracted_marts(con: duckdb.DuckDBPyConnection, schema: str) -> list[str]:
    """The datasets that have a contract and a table or view ``<schema>.<name>`` in ``con``'s
    database, in dataset-name order."""
    present = {
        name
        for (name,) in con.execute(
            "select table_name from information_schema.tables where table_schema = ?", [schema]
        ).fetchall()
    }
    return [name for name in dataset_names() if name in present]
