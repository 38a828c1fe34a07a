"""Run a contract suite on a pandas frame with GE's pandas datasource."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import pandas as pd

from contracts.datasets import DatasetContract
from orchestration.checks.gx_runtime import ephemeral_context, import_gx
from orchestration.checks.results import ContractCheckResult, failures_of
from orchestration.checks.suite import build_suite

if TYPE_CHECKING:
    from great_expectations import ExpectationSuite

RESULT_FORMAT = "SUMMARY"
"""Counts plus up to 20 example values per failed expectation (no per-row index lists)."""


def frame_for_gx(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with pandas 3's ``str`` columns relabelled as ``string`` (GE can name that).

    Both dtypes hold the same Arrow (or Python) strings: only the missing-value marker differs,
    so this is a relabelling without copying data. Nothing else changes.
    """
    relabel = {
        name: pd.StringDtype(storage=dtype.storage)
        for name, dtype in frame.dtypes.items()
        if isinstance(dtype, pd.StringDtype) and dtype.na_value is not pd.NA
    }
    return frame.astype(relabel) if relabel else frame


def validate_frame(frame: pd.DataFrame, suite: ExpectationSuite) -> Any:
    """Validate ``frame`` against ``suite`` in a fresh ephemeral context; GE's result object."""
    gx = import_gx()
    context = ephemeral_context()
    batch = (
        context.data_sources.add_pandas(name=f"{suite.name}_frame")
        .add_dataframe_asset(name=suite.name)
        .add_batch_definition_whole_dataframe(name="whole")
    )
    suite = context.suites.add(suite)
    definition = context.validation_definitions.add(
        gx.ValidationDefinition(name=suite.name, data=batch, suite=suite)
    )
    return definition.run(
        batch_parameters={"dataframe": frame_for_gx(frame)}, result_format=RESULT_FORMAT
    )


def check_dataset(
    frame: pd.DataFrame,
    contract: DatasetContract,
    *,
    today: dt.date,
    previous_rows: int | None,
) -> ContractCheckResult:
    """Check a whole mart held as a pandas frame (as DuckDB's ``.df()`` gives it)."""
    suite = build_suite(contract, today=today, previous_rows=previous_rows)
    validation = validate_frame(frame, suite).to_json_dict()
    suite_json = suite.to_json_dict()
    return ContractCheckResult(
        dataset=contract.name,
        success=bool(validation["success"]),
        row_count=len(frame),
        failures=failures_of(validation),
        validation=validation,
        suite=suite_json,
    )
