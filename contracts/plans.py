"""The plans table (``contracts/plans.yaml``): quotas, key rules and capability gates per plan."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

PLANS_FILE = Path(__file__).parent / "plans.yaml"

PlanCode = Literal["free", "pro", "max", "redistribution"]
Capability = Literal["insiders", "holdings", "managers", "changes", "webhooks"]


class Plan(BaseModel):
    """One plan's limits; ``None`` is the spec's "none" (no such limit)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    code: PlanCode
    name: str
    requests_per_day: int = Field(gt=0)
    requests_per_hour: int | None = Field(gt=0)
    rows_per_hour: int = Field(gt=0)
    rows_per_day: int = Field(gt=0)
    index_as_of_dates_per_day: int | None = Field(gt=0)
    active_keys: int = Field(gt=0)
    key_rotation: Literal["regenerate", "add"]
    pages_per_query: int = Field(gt=0)
    webhook_endpoints: int = Field(ge=0)
    tickers_per_request: int = Field(gt=0)
    resolve_tickers_per_request: int = Field(gt=0)
    history_floor_years: int | None = Field(gt=0)
    capabilities: frozenset[Capability]

    def allows(self, capability: Capability) -> bool:
        """Whether the plan may use ``capability`` (else the spec's 402)."""
        return capability in self.capabilities


@cache
def load_plans() -> dict[str, Plan]:
    """Every plan by code, in the file's order (Free first)."""
    raw = yaml.safe_load(PLANS_FILE.read_text())["plans"]
    return {code: Plan(code=code, **fields) for code, fields in raw.items()}


def plan(code: str) -> Plan:
    """The plan named ``code`` (``KeyError`` for an unknown one)."""
    return load_plans()[code]
