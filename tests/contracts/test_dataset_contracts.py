"""Published-dataset contracts: every dataset says how its data_through is found."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from findata.contracts.datasets import (
    DATASETS_DIR,
    DatasetContract,
    dataset_names,
    load_dataset_contract,
)


def _raw(name: str) -> dict[str, Any]:
    return yaml.safe_load((DATASETS_DIR / f"{name}.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", dataset_names())
def test_every_dataset_declares_its_data_through(name: str) -> None:
    through = load_dataset_contract(name).data_through
    assert through.why
    if through.same_as is not None:
        # a shared date comes from a dataset that finds its own
        assert through.same_as in dataset_names()
        assert load_dataset_contract(through.same_as).data_through.columns


def test_a_contract_without_data_through_does_not_load() -> None:
    raw = _raw("prices")
    del raw["data_through"]
    with pytest.raises(ValidationError, match="data_through"):
        DatasetContract.model_validate(raw)


@pytest.mark.parametrize(
    "through, problem",
    [
        ({"columns": ["close"], "why": "x"}, "not of type DATE"),
        ({"columns": ["no_such_column"], "why": "x"}, "unknown column"),
        ({"columns": ["date"], "same_as": "entities", "why": "x"}, "either columns or same_as"),
        ({"why": "x"}, "either columns or same_as"),
        ({"same_as": "prices", "why": "x"}, "same as itself"),
        ({"columns": ["date"]}, "why"),
    ],
)
def test_a_data_through_that_cannot_be_found_does_not_load(
    through: dict[str, Any], problem: str
) -> None:
    raw = {**_raw("prices"), "data_through": through}
    with pytest.raises(ValidationError, match=problem):
        DatasetContract.model_validate(raw)


def test_warning_level_rules_name_known_columns_and_no_row_count() -> None:
    raw = _raw("prices")
    warned = DatasetContract.model_validate(
        {**raw, "checks": {**raw["checks"], "warn": {"positive": ["volume"]}}}
    )
    assert warned.checks.warn.positive == ["volume"]
    with pytest.raises(ValidationError, match="unknown column"):
        DatasetContract.model_validate(
            {**raw, "checks": {**raw["checks"], "warn": {"allowed": {"no_such_column": ["x"]}}}}
        )
    # the row count is a blocking rule only
    with pytest.raises(ValidationError, match="row_count_min_ratio"):
        DatasetContract.model_validate(
            {**raw, "checks": {**raw["checks"], "warn": {"row_count_min_ratio": 0.5}}}
        )
