"""Checking a mart too large for one pandas frame: exact slices plus a sample.

GE's pandas engine holds the whole batch in memory and is slow per row (see the figures in
``findata.orchestration.contract_checks``), so a large mart is validated in parts, each a real GE
validation of some expectations of the one contract suite:

- exact, on every row, one slice of columns at a time: the key columns (key uniqueness, key not
  null, and the row count), then each other non-nullable column (not null);
- sampled: everything else (column list, dtypes, ordered pairs, signs, allowed values, date
  ranges) on a Bernoulli sample of about ``sample_rows`` rows of all columns.

The parts' results are merged into one GE validation result in suite order; each expectation
result's ``meta.rows`` says ``all`` or ``sample``.
"""

from __future__ import annotations

import datetime as dt
import gc
import json
from dataclasses import dataclass
from typing import Any, Literal

import duckdb
import pandas as pd

from findata.clock import get_clock
from findata.contracts.datasets import DatasetContract
from findata.orchestration.checks.frames import quote, read_frame
from findata.orchestration.checks.gx_runtime import import_gx
from findata.orchestration.checks.results import (
    ContractCheckResult,
    failures_of,
    no_blocking_failure,
)
from findata.orchestration.checks.suite import build_suite
from findata.orchestration.checks.validate import name_asset, validate_frame

EXACT_RULES = frozenset({"key", "not_null", "row_count_min_ratio"})
"""Contract rules checked on every row even when the rest is sampled."""

COLLECT_AFTER_BYTES = 8 * 2**20
"""A slice's frame at least this large is freed at once after its check by a full garbage
collection (GE keeps it in reference cycles). A mart checked in slices has more than
``FULL_CHECK_MAX_ROWS`` rows, so each of its whole-column slices is larger (one 8-byte column of 2
million rows: 16 MB); a sample's frame, or a test's small mart, is left to the collector: a full
collection costs ~0.25 s with GE and Dagster loaded (12 of a 4,000-row test's 18 s)."""


#: which rows a slice's frame holds: every row, a sample, or those a build changed (and every
#: row sharing a key with one: ``changed_rows.py``)
Rows = Literal["all", "sample", "changed"]


@dataclass(frozen=True)
class Slice:
    """One GE validation of part of a mart: which columns, which rows, which checks."""

    label: str
    columns: tuple[str, ...]
    rows: Rows
    expectations: tuple[dict[str, Any], ...]


def _columns(kwargs: dict[str, Any]) -> tuple[str, ...]:
    if "column" in kwargs:
        return (kwargs["column"],)
    return tuple(kwargs.get("column_list") or ())


def plan_slices(contract: DatasetContract, expectations: list[dict[str, Any]]) -> list[Slice]:
    """Split a suite's expectations (GE JSON) into exact column slices and the sampled rest."""
    key = tuple(contract.key)
    exact: dict[tuple[str, ...], list[dict[str, Any]]] = {key: []}
    sampled: list[dict[str, Any]] = []
    for expectation in expectations:
        if (expectation.get("meta") or {}).get("rule") not in EXACT_RULES:
            sampled.append(expectation)
            continue
        columns = _columns(expectation["kwargs"])
        slice_columns = key if set(columns) <= set(key) else columns
        exact.setdefault(slice_columns, []).append(expectation)
    slices = [
        Slice("_".join(columns), columns, "all", tuple(items))
        for columns, items in exact.items()
        if items
    ]
    slices.append(Slice("sample", tuple(contract.column_names), "sample", tuple(sampled)))
    return slices


def validate_slice(
    frame: pd.DataFrame, contract: DatasetContract, part: Slice, run_time: dt.datetime
) -> dict[str, Any]:
    """GE's validation result (JSON) of ``part``'s expectations on ``frame``."""
    gx = import_gx()
    suite = gx.ExpectationSuite(
        name=f"{contract.name}.{part.label}",
        expectations=[{k: v for k, v in e.items() if k != "id"} for e in part.expectations],
    )
    return validate_frame(frame, suite, run_time=run_time)


def signature(config: dict[str, Any]) -> str:
    """An expectation's identity across suites: its type and arguments (batch aside)."""
    kwargs = {k: v for k, v in (config.get("kwargs") or {}).items() if k != "batch_id"}
    return json.dumps([config["type"], kwargs], sort_keys=True, default=str)


def merge_validations(
    suite: dict[str, Any], parts: list[tuple[Slice, dict[str, Any]]], info: dict[str, Any]
) -> dict[str, Any]:
    """One GE validation result (JSON) from the parts' results, in the suite's order."""
    order = {signature(e): i for i, e in enumerate(suite["expectations"])}
    results = []
    for part, validation in parts:
        for item in validation["results"]:
            item["meta"] = {**(item.get("meta") or {}), "rows": part.rows}
            results.append(item)
    results.sort(key=lambda r: order.get(signature(r["expectation_config"]), len(order)))
    passed = sum(1 for r in results if r["success"])
    base = next((v for p, v in parts if p.rows != "all"), parts[0][1])
    return {
        **base,
        "success": passed == len(results),
        "results": results,
        "suite_name": suite["name"],
        "statistics": {
            "evaluated_expectations": len(results),
            "successful_expectations": passed,
            "unsuccessful_expectations": len(results) - passed,
            "success_percent": 100.0 * passed / len(results) if results else None,
        },
        "meta": {**base["meta"], "contract_check": info},
    }


def check_partitioned(
    con: duckdb.DuckDBPyConnection,
    schema: str,
    contract: DatasetContract,
    *,
    today: dt.date,
    previous_rows: int | None,
    row_count: int,
    sample_rows: int,
    seed: int,
) -> ContractCheckResult:
    """Check ``<schema>.<contract.name>``: key/null/count rules on every row, the rest sampled."""
    relation = f"{quote(schema)}.{quote(contract.name)}"
    existing = {
        name
        for (name,) in con.execute(
            "select column_name from information_schema.columns "
            "where table_schema = ? and table_name = ?",
            [schema, contract.name],
        ).fetchall()
    }
    suite = build_suite(contract, today=today, previous_rows=previous_rows).to_json_dict()
    percent = min(100.0, 100.0 * sample_rows / max(row_count, 1))
    run_time = get_clock().now()
    parts = []
    sampled_rows = 0
    for part in plan_slices(contract, suite["expectations"]):
        if part.rows == "sample":
            frame = read_frame(
                con,
                f"select * from {relation} "
                f"using sample bernoulli({percent:.9f} percent) repeatable ({seed})",
            )
            sampled_rows = len(frame)
        elif columns := [quote(c) for c in part.columns if c in existing]:
            frame = read_frame(con, f"select {', '.join(columns)} from {relation}")
        else:  # the slice's columns are all missing: GE reports each expectation's error
            frame = pd.DataFrame(index=pd.RangeIndex(row_count))
        parts.append((part, validate_slice(frame, contract, part, run_time)))
        large = frame.memory_usage(index=True).sum() >= COLLECT_AFTER_BYTES
        del frame
        if large:  # GE's context keeps the frame in reference cycles: free it before the next
            gc.collect()
    info = {
        "method": "exact+sample",
        "row_count": row_count,
        "sample_rows": sampled_rows,
        "sample_percent": percent,
        "exact_rules": sorted(EXACT_RULES),
    }
    return result_of_parts(
        contract,
        suite,
        parts,
        info,
        f"{schema}.{contract.name}: key, not-null and row-count rules on all {row_count:,} rows, "
        f"the other rules on a sample of {sampled_rows:,} rows",
    )


def result_of_parts(
    contract: DatasetContract,
    suite: dict[str, Any],
    parts: list[tuple[Slice, dict[str, Any]]],
    info: dict[str, Any],
    checked: str,
) -> ContractCheckResult:
    """One check result from the parts' validations; ``info`` (``method`` and ``row_count``
    included) goes into the result's meta, ``checked`` names what was read in the data docs."""
    validation = name_asset(merge_validations(suite, parts, info), checked)
    failures = failures_of(validation)
    return ContractCheckResult(
        dataset=contract.name,
        success=no_blocking_failure(failures),
        row_count=int(info["row_count"]),
        failures=failures,
        validation=validation,
        suite=suite,
        method=str(info["method"]),
    )
