"""A dataset contract as a Great Expectations suite (every expectation derived from the contract).

Types: a mart is validated as the pandas frame DuckDB hands over (``relation.df()``), so each
DuckDB type is checked as the pandas dtypes DuckDB produces for it (:data:`PANDAS_DTYPES`), with
``ExpectColumnValuesToBeInTypeList``. pandas 3 gives text its ``str`` dtype, which GE 1.24 cannot
name in a type list; :func:`findata.orchestration.checks.validate.frame_for_gx` relabels it as the
equivalent ``string`` dtype (same Arrow data, no copy) before validating. DATE and TIMESTAMP both
arrive as ``datetime64``, so the frame cannot tell them apart; the exact DuckDB types are
checked from the catalogue by ``run_contract_checks``.
"""

from __future__ import annotations

import datetime as dt
import math
import string
from decimal import Decimal
from itertools import combinations
from typing import TYPE_CHECKING, Any

from findata.clock import get_clock, utc_today
from findata.contracts.datasets import DatasetContract, RowRules
from findata.orchestration.checks.gx_runtime import import_gx

if TYPE_CHECKING:
    from great_expectations import ExpectationSuite

_DATETIMES = ["datetime64[s]", "datetime64[ms]", "datetime64[us]", "datetime64[ns]"]

#: GE's severity of a failure that does not stop the publish (``FailureSeverity.WARNING``)
WARNING = "warning"

#: GE's atomic renderer of an expectation's one-line summary
SUMMARY_RENDERER = "atomic.prescriptive.summary"

PANDAS_DTYPES: dict[str, list[str]] = {
    "BIGINT": ["int64", "Int64Dtype"],
    "INTEGER": ["int32", "Int32Dtype"],
    "DOUBLE": ["float64", "Float64Dtype"],
    "DATE": _DATETIMES,
    "TIMESTAMP": _DATETIMES,
    "VARCHAR": ["StringDtype", "str"],
    "BOOLEAN": ["bool", "BooleanDtype"],
}
"""Per DuckDB type, the dtype names GE accepts for it on a pandas frame read from DuckDB.

BIGINT/INTEGER/BOOLEAN come as numpy dtypes, or pandas' nullable ones when the column holds
nulls; ``StringDtype`` is text (after relabelling), ``str`` lets an ``object`` column of Python
strings through (GE then checks it value by value)."""


def ordered_pairs(chain: list[str]) -> list[tuple[str, str]]:
    """``(lower, higher)`` for every pair of a chain, in chain order.

    A chain must be non-decreasing with nulls skipped: that holds exactly when every pair of
    non-null values is in order, so each pair is checked (not only neighbours, whose check a null
    in the middle would skip).
    """
    return list(combinations(chain, 2))


def row_count_floor(previous_rows: int, ratio: float) -> int:
    """The fewest rows a new version may have: ``ceil(ratio x previous_rows)``, exactly."""
    return math.ceil(Decimal(str(ratio)) * previous_rows)


def _bound(value: dt.date, duck_type: str, *, upper: bool) -> dt.datetime:
    """A date bound as the ``datetime`` GE compares a ``datetime64`` column with."""
    if duck_type == "TIMESTAMP" and upper:
        return dt.datetime.combine(value, dt.time.max)
    return dt.datetime.combine(value, dt.time.min)


def rule_text(expectation: Any) -> str:
    """GE's own sentence for ``expectation`` (its atomic prescriptive summary, e.g.
    "status values must belong to this set: equal rounding."), rendered on a copy."""
    rendered = expectation.copy(deep=True)
    rendered.render()
    summary = next(c for c in rendered.rendered_content if c.name == SUMMARY_RENDERER)
    values = {name: param["value"] for name, param in summary.value.params.items()}
    return string.Template(summary.value.template).safe_substitute(values)


def _row_rule_expectations(
    rules: RowRules, types: dict[str, str], today: dt.date
) -> list[tuple[str, Any]]:
    """``(rule, expectation)`` for every row rule of ``rules``, in the contract's rule order."""
    e = import_gx().expectations
    items: list[tuple[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for chain in rules.ordered:
        for low, high in ordered_pairs(chain):
            if (low, high) in seen:
                continue
            seen.add((low, high))
            items.append(
                (
                    "ordered",
                    e.ExpectColumnPairValuesAToBeGreaterThanB(
                        column_A=high,
                        column_B=low,
                        or_equal=True,
                        ignore_row_if="either_value_is_missing",
                    ),
                )
            )
    items += [
        ("positive", e.ExpectColumnValuesToBeBetween(column=c, min_value=0, strict_min=True))
        for c in rules.positive
    ]
    items += [
        ("non_negative", e.ExpectColumnValuesToBeBetween(column=c, min_value=0))
        for c in rules.non_negative
    ]
    items += [
        ("allowed", e.ExpectColumnValuesToBeInSet(column=c, value_set=list(values)))
        for c, values in rules.allowed.items()
    ]
    for column, rng in rules.date_range.items():
        high = today if rng.max == "today" else rng.max
        items.append(
            (
                "date_range",
                e.ExpectColumnValuesToBeBetween(
                    column=column,
                    min_value=_bound(rng.min, types[column], upper=False) if rng.min else None,
                    max_value=_bound(high, types[column], upper=True) if high else None,
                ),
            )
        )
    return items


def build_suite(
    contract: DatasetContract,
    *,
    today: dt.date | None = None,
    previous_rows: int | None = None,
) -> ExpectationSuite:
    """The contract's Great Expectations suite, named after the dataset.

    ``today`` is the upper bound of ``date_range`` rules whose ``max`` is ``today`` (default: the
    process clock's UTC date). ``previous_rows`` is the previous version's row count; without it
    there is no row-count expectation. Each expectation's ``meta.rule`` names the contract rule it
    comes from; its GE ``severity`` is ``critical`` (it stops the publish), or ``warning`` for
    the contract's ``checks.warn`` rules, which come last; each one's ``notes`` say which (the
    data docs show them).
    """
    gx = import_gx()
    e = gx.expectations
    today = today if today is not None else utc_today(get_clock())
    types = {c.name: c.type for c in contract.columns}
    checks = contract.checks
    items: list[tuple[str, Any]] = [
        ("columns", e.ExpectTableColumnsToMatchOrderedList(column_list=contract.column_names))
    ]
    items += [
        ("type", e.ExpectColumnValuesToBeInTypeList(column=c.name, type_list=PANDAS_DTYPES[c.type]))
        for c in contract.columns
    ]
    items += [
        ("not_null", e.ExpectColumnValuesToNotBeNull(column=c.name))
        for c in contract.columns
        if not c.nullable
    ]
    if len(contract.key) == 1:
        items.append(("key", e.ExpectColumnValuesToBeUnique(column=contract.key[0])))
    else:
        items.append(("key", e.ExpectCompoundColumnsToBeUnique(column_list=list(contract.key))))
    items += _row_rule_expectations(checks, types, today)
    if previous_rows is not None:
        items.append(
            (
                "row_count_min_ratio",
                e.ExpectTableRowCountToBeBetween(
                    min_value=row_count_floor(previous_rows, checks.row_count_min_ratio)
                ),
            )
        )
    warnings = _row_rule_expectations(checks.warn, types, today)
    source = f"contracts/datasets/{contract.name}.yaml"
    for rule, expectation in items:
        expectation.meta = {"rule": rule}
        expectation.notes = f"Contract rule `{rule}` of {source}."
    for rule, expectation in warnings:
        expectation.severity = WARNING
        expectation.meta = {"rule": rule}
        expectation.notes = (
            f"Warning-level contract rule `{rule}` (`checks.warn`) of {source}: reported, "
            "does not stop the publish."
        )
        expectation.description = f"WARNING, does not stop the publish: {rule_text(expectation)}"
    return gx.ExpectationSuite(
        name=contract.name,
        expectations=[expectation for _, expectation in items + warnings],
        meta={
            "contract": source,
            "grain": contract.grain,
            "key": list(contract.key),
            "today": today.isoformat(),
            "previous_rows": previous_rows,
        },
        notes=contract.description.strip(),
    )
