"""Endpoint contracts: every file loads, and the two kinds keep their rules (a service
endpoint reads no parameters, data or page and is never counted; a data endpoint reads the key
and has a row order)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from findata.contracts.endpoints import (
    ENDPOINTS_DIR,
    EndpointContract,
    endpoint_names,
    load_endpoint_contract,
)


def _raw(name: str) -> dict[str, Any]:
    return yaml.safe_load((ENDPOINTS_DIR / f"{name}.yaml").read_text(encoding="utf-8"))


def test_every_contract_loads_and_service_endpoints_are_status_and_usage() -> None:
    kinds = {name: load_endpoint_contract(name).kind for name in endpoint_names()}
    assert {name for name, kind in kinds.items() if kind == "service"} == {"status", "usage"}
    assert load_endpoint_contract("status").key == "never"
    assert load_endpoint_contract("status").all_parameters == []
    assert [p.name for p in load_endpoint_contract("usage").all_parameters] == ["api_key"]


@pytest.mark.parametrize(
    "change",
    [
        {"counts_per": "subject"},  # a service endpoint is never counted
        {"envelope": "data_meta"},
        {"paging": {"kind": "cursor", "default_limit": 10, "max_limit": 20}},
        {"dataset": "prices"},
        {"capability": "changes"},
        {"parameters": [{"name": "x", "type": "text", "description": "x"}]},
    ],
)
def test_a_service_contract_with_data_parts_is_refused(change: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="service endpoint"):
        EndpointContract.model_validate({**_raw("usage"), **change})


@pytest.mark.parametrize(
    "change", [{"key": "never"}, {"order_description": None}, {"envelope": "body"}]
)
def test_a_data_contract_must_read_the_key_and_order_its_rows(change: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        EndpointContract.model_validate({**_raw("prices"), **change})
