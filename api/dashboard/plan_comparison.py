"""The billing page's comparison of the plans: limits, data, history and webhooks, read from
``contracts/plans.yaml`` and the endpoint contracts' plan gates (nothing here restates a plan)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from findata.contracts.endpoints import EndpointContract, endpoint_names, load_endpoint_contract
from findata.contracts.plans import Plan, load_plans

NO_LIMIT = "No limit"


@dataclass(frozen=True)
class Row:
    """One line of the comparison: what it compares (and what that covers), one cell per
    plan."""

    label: str
    cells: tuple[str, ...]
    detail: str = ""


@dataclass(frozen=True)
class Section:
    """A group of lines under a heading."""

    title: str
    rows: tuple[Row, ...]


@dataclass(frozen=True)
class PlanComparison:
    """The plans (columns, in the file's order) and the sections of lines."""

    plans: tuple[Plan, ...]
    sections: tuple[Section, ...]


@cache
def plan_comparison() -> PlanComparison:
    """The comparison of every plan (the contracts are read once per process)."""
    plans = tuple(load_plans().values())

    def row(label: str, cell: Callable[[Plan], str], detail: str = "") -> Row:
        return Row(label, tuple(cell(each) for each in plans), detail)

    contracts = map(load_endpoint_contract, endpoint_names())
    # every plan's data first, then what some plans add
    data = sorted(
        (contract for contract in contracts if contract.kind == "data"),
        key=lambda contract: (contract.capability is not None, contract.name),
    )
    floored = ", ".join(contract.name for contract in data if contract.history_floor)
    return PlanComparison(
        plans,
        (
            Section(
                "Limits",
                (
                    row("Requests per day", lambda p: _count(p.requests_per_day)),
                    row("Requests per hour", lambda p: _count(p.requests_per_hour)),
                    row("Rows per hour", lambda p: _count(p.rows_per_hour)),
                    row("Rows per day", lambda p: _count(p.rows_per_day)),
                    row("Tickers per request", lambda p: _count(p.tickers_per_request)),
                    row("Pages per query", lambda p: _count(p.pages_per_query)),
                    row(
                        "Index roster dates (as_of) per day",
                        lambda p: _count(p.index_as_of_dates_per_day),
                    ),
                    row("Active API keys", lambda p: _count(p.active_keys)),
                    row("A new key", _rotation),
                ),
            ),
            Section(
                "Data",
                tuple(
                    row(contract.summary, _access(contract), contract.paths[0]) for contract in data
                ),
            ),
            Section("History", (row("History served", _history, floored),)),
            Section(
                "Webhooks",
                (row("Webhook endpoints (data.changed events)", _webhooks),),
            ),
        ),
    )


def _count(value: int | None) -> str:
    return NO_LIMIT if value is None else f"{value:,}"


def _rotation(plan: Plan) -> str:
    return "Replaces the key" if plan.key_rotation == "regenerate" else "Adds a key"


def _access(contract: EndpointContract) -> Callable[[Plan], str]:
    def cell(plan: Plan) -> str:
        return "Yes" if contract.capability is None or plan.allows(contract.capability) else "No"

    return cell


def _history(plan: Plan) -> str:
    years = plan.history_floor_years
    if years is None:
        return "Full history"
    return "Last year" if years == 1 else f"Last {years} years"


def _webhooks(plan: Plan) -> str:
    return f"Up to {plan.webhook_endpoints}" if plan.webhook_endpoints else "No"
