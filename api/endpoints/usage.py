"""``GET /v1/auth/usage``: the account's requests today against its daily limit."""

from __future__ import annotations

from findata.accounts.usage import next_window_start
from findata.api.calls import ServiceAnswer, ServiceCall


def handle(call: ServiceCall) -> ServiceAnswer:
    """Counts are per account (all its keys share them), per UTC day."""
    owner = call.owner
    assert owner is not None  # the contract requires a key
    requests_today, rows_today = call.counters.usage(owner.account.id, call.now, "day")
    plan = owner.plan
    body = {
        "requests_today": requests_today,
        "daily_limit": plan.requests_per_day,
        "resets_at": next_window_start(call.now, "day"),
        "rows_today": rows_today,
        "plan": plan.code,
    }
    # the counts move with every request of the account: never kept by a cache
    return ServiceAnswer(body, "no-store")
