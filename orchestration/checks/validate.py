"""Run a contract suite on a pandas frame with GE's pandas datasource."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import pandas as pd

from findata.clock import get_clock
from findata.contracts.datasets import DatasetContract
from findata.orchestration.checks.gx_runtime import ephemeral_context, import_gx
from findata.orchestration.checks.results import (
    ContractCheckResult,
    failures_of,
    no_blocking_failure,
)
from findata.orchestration.checks.suite import build_suite

if TYPE_CHECKING:
    from great_expectations import ExpectationSuite

RESULT_FORMAT = "BASIC"
"""Counts, observed values and up to 20 unexpected values per expectation: what a passing
validation records (GE's ``SUMMARY`` counts every unexpected value too, and takes ~1.6 times as
long: the small demo's five largest marts whole, 5.9 s against 3.8 s)."""

FAILED_RESULT_FORMAT = "SUMMARY"
"""A failed validation runs again so: up to 20 example values each with how often it occurs (no
per-row index lists)."""

RUN_NAME = "contract_check"


def frame_for_gx(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with two dtype relabellings GE 1.24 needs; the values do not change.

    - pandas 3's ``str`` columns become ``string`` (same strings, only the missing-value marker
      differs, no copy): GE cannot name ``str`` in a type list.
    - ``datetime64`` columns in s/ms/us become ``datetime64[ns]`` when every value fits (years
      1678-2261): GE compares only nanosecond datetimes vectorised, any other unit value by value
      in Python (12 s instead of 0.1 s per million rows).
    """
    relabel: dict[str, Any] = {}
    for name, dtype in frame.dtypes.items():
        if isinstance(dtype, pd.StringDtype) and dtype.na_value is not pd.NA:
            relabel[name] = pd.StringDtype(storage=dtype.storage)
        elif _is_coarse_datetime(frame[name]):
            relabel[name] = "datetime64[ns]"
    return frame.astype(relabel) if relabel else frame


def _is_coarse_datetime(column: pd.Series) -> bool:
    """A tz-naive datetime column in a unit coarser than ns whose values all fit in ns."""
    if not pd.api.types.is_datetime64_dtype(column.dtype) or column.dtype == "datetime64[ns]":
        return False
    low, high = column.min(), column.max()
    return pd.isna(low) or (pd.Timestamp.min <= low and high <= pd.Timestamp.max)


def validate_frame(
    frame: pd.DataFrame,
    suite: ExpectationSuite,
    *,
    context: Any | None = None,
    run_time: dt.datetime | None = None,
) -> dict[str, Any]:
    """Validate ``frame`` against ``suite``; GE's validation result as JSON.

    ``context`` defaults to a fresh ephemeral one (pass one to validate several frames with
    differently named suites); ``run_time`` defaults to the process clock's now.
    """
    gx = import_gx()
    from great_expectations.core.run_identifier import RunIdentifier

    context = context if context is not None else ephemeral_context()
    batch = (
        context.data_sources.add_pandas(name=suite.name)
        .add_dataframe_asset(name=suite.name)
        .add_batch_definition_whole_dataframe(name="whole")
    )
    suite = context.suites.add(suite)
    definition = context.validation_definitions.add(
        gx.ValidationDefinition(name=suite.name, data=batch, suite=suite)
    )
    batch_parameters = {"dataframe": frame_for_gx(frame)}
    run_id = RunIdentifier(run_name=RUN_NAME, run_time=run_time or get_clock().now())
    result = definition.run(
        batch_parameters=batch_parameters, result_format=RESULT_FORMAT, run_id=run_id
    )
    if not result.success:
        result = definition.run(
            batch_parameters=batch_parameters, result_format=FAILED_RESULT_FORMAT, run_id=run_id
        )
    return result.to_json_dict()


def name_asset(validation: dict[str, Any], asset_name: str) -> dict[str, Any]:
    """Record ``asset_name`` where GE's data docs look for it (``meta.batch_spec``)."""
    meta = validation.setdefault("meta", {})
    meta["batch_spec"] = {**(meta.get("batch_spec") or {}), "data_asset_name": asset_name}
    return validation


def check_dataset(
    frame: pd.DataFrame,
    contract: DatasetContract,
    *,
    today: dt.date,
    previous_rows: int | None,
    asset_name: str | None = None,
) -> ContractCheckResult:
    """Check a whole mart held as a pandas frame (as DuckDB's ``.df()`` gives it), exactly.

    ``asset_name`` (default: the dataset's name) is what the data docs call the data checked.
    """
    suite = build_suite(contract, today=today, previous_rows=previous_rows)
    validation = name_asset(validate_frame(frame, suite), asset_name or contract.name)
    failures = failures_of(validation)
    return ContractCheckResult(
        dataset=contract.name,
        success=no_blocking_failure(failures),
        row_count=len(frame),
        failures=failures,
        validation=validation,
        suite=suite.to_json_dict(),
        method="full",
    )
