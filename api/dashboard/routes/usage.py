"""The usage page: today's requests (by the per-ticker count, as ``/v1/auth/usage``), rows
today and this hour, distinct entities today, each against the plan's allowance; a seven-day
chart and a per-endpoint table that count one per API call (spec: "How requests are counted",
point 6)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from fastapi import APIRouter
from starlette.responses import Response

from findata.accounts.usage import calls_by_day, calls_by_endpoint, next_window_start
from findata.api.dashboard.charts import day_bars
from findata.api.dashboard.deps import Member
from findata.contracts.plans import plan

router = APIRouter(prefix="/dashboard/usage")
DAYS = 7


@dataclass(frozen=True)
class Gauge:
    """One count against its allowance (None: the plan sets no such limit)."""

    label: str
    used: int
    allowance: int | None
    resets_at: dt.datetime | None

    @property
    def percent(self) -> int:
        """How much of the allowance is used (0-100)."""
        if not self.allowance:
            return 0
        return min(100, round(100 * self.used / self.allowance))


@router.get("", include_in_schema=False)
def usage(page: Member) -> Response:
    """The account's usage today and over the last seven days."""
    account = page.signed_in.account
    rules = plan(account.plan)
    now = page.services.clock.now()
    today = now.date()
    counters = page.services.counters
    requests_today, rows_today = counters.usage(account.id, now, "day")
    requests_hour, rows_hour = counters.usage(account.id, now, "hour")
    entities_today = counters.count_distinct(account.id, today, "entity")
    counters.flush()  # this process's calls not yet in the log (other processes': within 1 s)
    with page.services.engine.connect() as connection:
        days = calls_by_day(connection, account.id, today - dt.timedelta(days=DAYS - 1), today)
        since = dt.datetime.combine(today - dt.timedelta(days=DAYS - 1), dt.time(), dt.UTC)
        endpoints = calls_by_endpoint(connection, account.id, since)
    day_end, hour_end = next_window_start(now, "day"), next_window_start(now, "hour")
    entity_rule = rules.slowdowns.entities
    gauges = [
        Gauge("Requests today", requests_today, rules.requests_per_day, day_end),
        Gauge("Rows today", rows_today, rules.rows_per_day, day_end),
        Gauge("Rows this hour", rows_hour, rules.rows_per_hour, hour_end),
        Gauge(
            "Distinct entities today (slower answers past the allowance)",
            entities_today,
            entity_rule.after if entity_rule else None,
            day_end,
        ),
    ]
    if rules.requests_per_hour:
        gauges.insert(
            1, Gauge("Requests this hour", requests_hour, rules.requests_per_hour, hour_end)
        )
    chart = day_bars(days, f"API calls per day, last {DAYS} days (UTC)")
    return page.render(
        "usage.html", plan=rules, gauges=gauges, chart=chart, endpoints=endpoints, days=DAYS
    )
