"""plans.yaml and errors.yaml hold the spec's numbers, codes, statuses and fixed texts
("Quotas per plan", "Keys per account", "Errors", "Authentication failures")."""

from __future__ import annotations

import pytest
import yaml

from findata.contracts.errors import ERRORS_FILE, load_errors
from findata.contracts.plans import PLANS_FILE, Capability, load_plans, plan

PLAN_CODES = ["free", "pro", "max", "redistribution"]

#: quota -> (Free, Pro, Max, Redistribution); None is the spec's "none"
QUOTAS: dict[str, tuple[int | None, ...]] = {
    "requests_per_day": (100, 10_000, 50_000, 500_000),
    "requests_per_hour": (40, None, None, None),
    "rows_per_hour": (100_000, 1_000_000, 5_000_000, 50_000_000),
    "rows_per_day": (500_000, 5_000_000, 25_000_000, 250_000_000),
    "index_as_of_dates_per_day": (51, None, None, None),
    "active_keys": (1, 1, 5, 10),
    "pages_per_query": (10, 50, 100, 200),
    "webhook_endpoints": (0, 0, 5, 10),
}

ALL_CAPABILITIES: set[Capability] = {"insiders", "holdings", "managers", "changes", "webhooks"}
CAPABILITIES: dict[str, set[Capability]] = {
    "free": set(),
    "pro": {"insiders", "holdings", "managers"},
    "max": ALL_CAPABILITIES,
    "redistribution": ALL_CAPABILITIES,
}

STATUSES = {
    "bad_request": 400,
    "pagination_limit_reached": 400,
    "unauthorized": 401,
    "upgrade_required": 402,
    "account_disabled": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "ambiguous_ticker": 409,
    "cursor_expired": 410,
    "burst_limit_reached": 429,
    "daily_limit_reached": 429,
    "rate_limit_exceeded": 429,
    "temporarily_blocked": 429,
    "hourly_usage_limit": 429,
    "row_limit_exceeded": 429,
    "asof_limit_exceeded": 429,
    "internal_error": 500,
    "coverage_unavailable": 503,
    "request_timeout": 504,
    "query_timeout": 504,
}
#: codes of ours where the spec names none (contracts/errors.yaml says why): a request the
#: server's stop cut short (issue 42)
OUR_CODES = {"service_unavailable": 503}


def test_the_four_plans_in_order() -> None:
    raw = yaml.safe_load(PLANS_FILE.read_text())["plans"]
    assert list(raw) == PLAN_CODES
    assert list(load_plans()) == PLAN_CODES
    assert [plan(code).name for code in PLAN_CODES] == ["Free", "Pro", "Max", "Redistribution"]
    with pytest.raises(KeyError):
        plan("gold")


@pytest.mark.parametrize("quota", list(QUOTAS))
def test_plan_quotas_are_the_spec_numbers(quota: str) -> None:
    assert tuple(getattr(plan(code), quota) for code in PLAN_CODES) == QUOTAS[quota]


def test_key_rules() -> None:
    assert [plan(code).key_rotation for code in PLAN_CODES] == [
        "regenerate",
        "regenerate",
        "add",
        "add",
    ]


@pytest.mark.parametrize("code", PLAN_CODES)
def test_plan_capabilities(code: str) -> None:
    assert set(plan(code).capabilities) == CAPABILITIES[code]
    for capability in ALL_CAPABILITIES:
        assert plan(code).allows(capability) == (capability in CAPABILITIES[code])


def test_every_spec_error_code_with_its_status() -> None:
    raw = yaml.safe_load(ERRORS_FILE.read_text())["errors"]
    assert set(raw) == set(STATUSES) | set(OUR_CODES)
    errors = load_errors().errors
    assert {code: kind.status for code, kind in errors.items()} == STATUSES | OUR_CODES


def test_fixed_error_texts() -> None:
    errors = load_errors().errors
    assert errors["burst_limit_reached"].error == (
        "Burst limit reached (40 requests/hour). Try again shortly."
    )
    daily = errors["daily_limit_reached"].error
    assert daily == "Daily limit reached ({daily_limit} requests/day). Resets at midnight UTC."
    assert daily.format(daily_limit=100) == (
        "Daily limit reached (100 requests/day). Resets at midnight UTC."
    )
    assert errors["rate_limit_exceeded"].error == "Rate limit exceeded"
    assert errors["temporarily_blocked"].error == "Temporarily blocked"
    assert errors["pagination_limit_reached"].error == "Pagination limit reached"
    disabled = errors["account_disabled"].error
    assert disabled is not None and disabled.startswith("Account temporarily disabled.")
    assert "support" in disabled.removeprefix("Account temporarily disabled.").lower()
    details = {code: kind.detail for code, kind in errors.items()}
    assert details["hourly_usage_limit"] == "Hourly usage limit reached. Try again shortly."
    assert details["row_limit_exceeded"] == (
        "Daily data volume limit reached. Resets at midnight UTC."
    )
    assert details["coverage_unavailable"] == "Holdings coverage is not available"
    assert details["request_timeout"] == "Request exceeded time limit"
    assert details["query_timeout"] == "Query exceeded time limit"
    assert "historical index query limit" in (details["asof_limit_exceeded"] or "").lower()
    assert load_errors().not_found_details["unknown_endpoint"] == "Unknown endpoint"


def test_which_bodies_carry_message_and_retry_after() -> None:
    errors = load_errors().errors
    with_message = {code for code, kind in errors.items() if kind.message is not False}
    assert with_message == {
        "unauthorized",
        "account_disabled",
        "pagination_limit_reached",
        "burst_limit_reached",
        "daily_limit_reached",
        "rate_limit_exceeded",
        "temporarily_blocked",
    }
    # Temporarily blocked: message is a contact-support text, not the detail
    blocked = errors["temporarily_blocked"].message
    assert isinstance(blocked, str) and "support" in blocked.lower()
    retry = {code: kind.retry_after for code, kind in errors.items() if kind.retry_after}
    assert retry == {
        "burst_limit_reached": "next_hour",
        "rate_limit_exceeded": "next_hour",
        "daily_limit_reached": "next_day",
    }


def test_six_distinct_unauthorized_details() -> None:
    details = load_errors().unauthorized_details
    assert set(details) == {
        "missing",
        "incomplete",
        "authorization_not_bearer",
        "other_name",
        "revoked",
        "unrecognised",
    }
    texts = [text.strip() for text in details.values()]
    assert all(texts) and len(set(texts)) == 6
    assert "{revoked_on}" in details["revoked"]  # gives the revocation date
    assert "{place}" in details["other_name"]  # names the place the key was found
    assert "Authorization" in details["authorization_not_bearer"]
