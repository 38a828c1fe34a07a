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


class Slowdown(BaseModel):
    """Answers wait ``per_step`` seconds for each distinct value past ``after``, at most
    ``max_seconds``; the request that uses the last allowed value waits ``last_seconds``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    after: int = Field(gt=0)
    per_step: float = Field(gt=0)
    max_seconds: float = Field(gt=0)
    last_seconds: float | None = None

    def delay(self, distinct: int, allowance: int | None = None) -> float:
        """Seconds to wait when ``distinct`` values have been used (this request included)."""
        if allowance is not None and self.last_seconds is not None and distinct == allowance:
            return self.last_seconds
        return min(self.max_seconds, max(0, distinct - self.after) * self.per_step)


class AllowanceSlowdown(BaseModel):
    """Answers slow as the day's requests approach the allowance: no wait up to
    ``after_fraction`` of it, then a wait growing linearly to ``max_seconds`` at the last
    allowed request."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    after_fraction: float = Field(gt=0, lt=1)
    max_seconds: float = Field(gt=0)

    def delay(self, used: int, allowance: int) -> float:
        """Seconds to wait when ``used`` of ``allowance`` requests are used (this one
        included)."""
        past = used / allowance - self.after_fraction
        return round(self.max_seconds * min(1.0, max(0.0, past / (1 - self.after_fraction))), 6)


class Slowdowns(BaseModel):
    """The slow-downs of spec "Quotas per plan" (Free's entities and index dates; every
    plan's approach to its daily request allowance)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    entities: Slowdown | None = None
    index_as_of: Slowdown | None = None
    daily_requests: AllowanceSlowdown | None = None


class KeylessLimits(BaseModel):
    """Limits per IP address on requests without a key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requests_per_day: int = Field(gt=0)
    requests_per_hour: int = Field(gt=0)


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
    slowdowns: Slowdowns = Field(default_factory=Slowdowns)

    def allows(self, capability: Capability) -> bool:
        """Whether the plan may use ``capability`` (else the spec's 402)."""
        return capability in self.capabilities


@cache
def _plans_file() -> dict:
    return yaml.safe_load(PLANS_FILE.read_text())


@cache
def load_plans() -> dict[str, Plan]:
    """Every plan by code, in the file's order (Free first)."""
    return {code: Plan(code=code, **fields) for code, fields in _plans_file()["plans"].items()}


@cache
def keyless_limits() -> KeylessLimits:
    """The per-IP limits of requests without a key."""
    return KeylessLimits.model_validate(_plans_file()["keyless"])


def plan(code: str) -> Plan:
    """The plan named ``code`` (``KeyError`` for an unknown one)."""
    return load_plans()[code]
