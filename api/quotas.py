"""Quotas (spec "Limits", the 429 rows of "Errors", "Keyless access"): requests per UTC day and
clock hour, rows per hour and day, distinct entities and index ``as_of`` dates per day, per
account (all its keys) or, without a key, per IP address.

A request is admitted by reserving its cost (one per ticker or entity_id, per page) on the
usage counters (``accounts/counters/``: in memory, in Redis or in the database, as the
settings choose), all or nothing; a request refused afterwards (a 400 from the handler) gives
its reservation back; a 200, 404, 409 or 5xx keeps it. Rows and entities are added once the
answer is known. Time comes from the app's clock; slow-downs call an injectable ``sleep``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from findata.accounts.counters import AnsweredCall, UsageCounters
from findata.accounts.store import KeyOwner
from findata.accounts.tables import blocked_ips
from findata.accounts.usage import Limits, Reserved, next_window_start
from findata.api.errors import ApiError
from findata.api.prometheus import ApiMetrics
from findata.clock import Clock
from findata.contracts.plans import Plan, keyless_limits

Sleep = Callable[[float], None]

BLOCKED_DETAIL = "Requests without a key from this address are temporarily refused."
RATE_LIMIT_DETAIL = (
    "Rate limit exceeded: requests without a key from this address used their {limit} requests "
    "this hour. Try again at the next UTC hour, or send an API key."
)


@dataclass(frozen=True)
class Ticket:
    """An admitted request: who pays, how much, and the counts after paying."""

    subject: str
    cost: int
    reserved: Reserved
    limits: Limits
    keyed: bool
    plan: Plan | None

    def rate_limit_headers(self) -> dict[str, str]:
        """``X-RateLimit-*`` of the spec's "Response headers" (hourly pair on Free and keyless)."""
        limits, reserved = self.limits, self.reserved
        headers = {
            "X-RateLimit-Limit-Day": str(limits.requests_per_day),
            "X-RateLimit-Remaining-Day": str(
                max(0, limits.requests_per_day - reserved.requests_day)
            ),
        }
        if limits.requests_per_hour is not None:
            headers["X-RateLimit-Limit-Hour"] = str(limits.requests_per_hour)
            headers["X-RateLimit-Remaining-Hour"] = str(
                max(0, limits.requests_per_hour - reserved.requests_hour)
            )
        return headers


class Quotas:
    """Admission and accounting on one set of usage counters."""

    def __init__(
        self,
        counters: UsageCounters,
        engine: sa.Engine,
        clock: Clock,
        sleep: Sleep,
        metrics: ApiMetrics | None = None,
    ) -> None:
        self.counters = counters
        self.engine = engine  # the blocked addresses
        self.clock = clock
        self.sleep = sleep
        self.metrics = metrics  # refusals by reason

    def _refused(self, error: ApiError) -> ApiError:
        """``error`` (a 429), counted by its code."""
        if self.metrics is not None:
            self.metrics.quota_refused(error.code)
        return error

    def admit(self, owner: KeyOwner | None, ip: str, cost: int) -> Ticket:
        """Reserve ``cost`` requests, or raise the spec's 429 (nothing is used then)."""
        now = self.clock.now()
        if owner is None:
            subject, plan = f"ip:{ip}", None
            keyless = keyless_limits()
            limits = Limits(keyless.requests_per_day, keyless.requests_per_hour)
            self._refuse_blocked(ip)
        else:
            subject, plan = owner.account.id, owner.plan
            limits = Limits(
                plan.requests_per_day, plan.requests_per_hour, plan.rows_per_day, plan.rows_per_hour
            )
        outcome = self.counters.reserve(subject, now, cost, limits)
        if isinstance(outcome, str):
            raise self._refused(_refusal(outcome, limits, now, keyless=owner is None))
        return Ticket(subject, cost, outcome, limits, owner is not None, plan)

    def give_back(self, ticket: Ticket) -> None:
        """The request was refused after admission (a 400 or 402): it uses nothing."""
        self.counters.release(ticket.subject, ticket.reserved.at, ticket.cost)

    def settle(
        self,
        ticket: Ticket,
        endpoint: str,
        status: int,
        rows: int,
        entity_ids: Iterable[int],
        *,
        cached: bool = False,
    ) -> dict[str, str]:
        """Count an answered request: rows (not for cached answers), distinct entities, the
        usage log; the slow-downs of a 200 (Free's after many entities, every plan's near
        the daily allowance). The headers the answer carries."""
        counted_rows = 0 if cached else rows
        call = AnsweredCall(endpoint, status, ticket.cost, counted_rows)
        entities = [str(i) for i in entity_ids]
        rows_today, entities_today = self.counters.count_answer(
            ticket.subject, ticket.reserved.at, call, entities
        )
        headers = ticket.rate_limit_headers()
        if ticket.keyed and status == 200 and not cached:
            headers["X-Rows-Today"] = str(rows_today)
            headers["X-Entities-Today"] = str(entities_today)
        if status == 200:
            delay = self._slowdown(ticket, entities_today)
            if delay > 0:
                self.sleep(delay)
        return headers

    def admit_index_as_of(self, owner: KeyOwner, as_of: dt.date) -> None:
        """Free's index snapshots: after the day's allowance of distinct ``as_of`` dates every
        roster request with ``as_of`` is 429; the request that uses the last one waits 30 s;
        past 20 distinct dates answers slow down."""
        plan = owner.plan
        allowance = plan.index_as_of_dates_per_day
        if allowance is None:
            return
        day = self.clock.now().date()
        subject = owner.account.id
        used = self.counters.add_distinct_within(
            subject, day, "as_of", as_of.isoformat(), allowance
        )
        if used is None:
            raise self._refused(ApiError("asof_limit_exceeded"))
        slowdown = plan.slowdowns.index_as_of
        if slowdown is not None:
            delay = slowdown.delay(used, allowance)
            if delay > 0:
                self.sleep(delay)

    @staticmethod
    def _slowdown(ticket: Ticket, entities_today: int) -> float:
        """The longer of the plan's waits for this answer (keyless answers never wait)."""
        if ticket.plan is None:
            return 0.0
        slowdowns = ticket.plan.slowdowns
        delays = [0.0]
        if slowdowns.entities is not None:
            delays.append(slowdowns.entities.delay(entities_today))
        if slowdowns.daily_requests is not None:
            used = ticket.reserved.requests_day
            delays.append(slowdowns.daily_requests.delay(used, ticket.limits.requests_per_day))
        return max(delays)

    def _refuse_blocked(self, ip: str) -> None:
        with self.engine.connect() as connection:
            blocked = connection.execute(
                sa.select(blocked_ips.c.ip).where(blocked_ips.c.ip == ip)
            ).first()
        if blocked is not None:
            raise self._refused(ApiError("temporarily_blocked", BLOCKED_DETAIL))


def _refusal(outcome: str, limits: Limits, now: dt.datetime, *, keyless: bool) -> ApiError:
    """The 429 of a refused reservation."""
    to_hour = _seconds_until(next_window_start(now, "hour"), now)
    to_day = _seconds_until(next_window_start(now, "day"), now)
    if outcome == "rows_day":
        return ApiError("row_limit_exceeded")
    if outcome == "rows_hour":
        return ApiError("hourly_usage_limit")
    if outcome == "requests_day":
        text = (
            f"Daily limit reached ({limits.requests_per_day} requests/day). Resets at midnight UTC."
        )
        return ApiError(
            "daily_limit_reached",
            text,
            retry_after_seconds=to_day,
            error_values={"daily_limit": limits.requests_per_day},
        )
    if keyless and outcome == "requests_hour_again":
        return ApiError(
            "rate_limit_exceeded",
            RATE_LIMIT_DETAIL.format(limit=limits.requests_per_hour),
            retry_after_seconds=to_hour,
        )
    return ApiError(
        "burst_limit_reached",
        f"Burst limit reached ({limits.requests_per_hour} requests/hour). Try again shortly.",
        retry_after_seconds=to_hour,
    )


def _seconds_until(boundary: dt.datetime, now: dt.datetime) -> int:
    """Whole seconds to ``boundary``, rounded up (never 0 before it)."""
    remaining = (boundary - now).total_seconds()
    return max(1, int(-(-remaining // 1)))


def entity_ids_of(rows: Any) -> list[int]:
    """The entities an answer served: ``entity_id`` of its rows (resolve: of each ticker's
    entities)."""
    if isinstance(rows, dict):
        rows = [e for item in rows.values() for e in item.get("entities", [])]
    return sorted({r["entity_id"] for r in rows if isinstance(r, dict) and r.get("entity_id")})
