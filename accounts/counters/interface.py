"""The one interface of the usage counters (``UsageCounters``) and what it speaks of: the
backends are ``memory.py``, ``database.py`` and ``redis.py`` beside it, chosen by
``findata.accounts.counters.usage_counters_for``."""

from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Literal

from findata.accounts.usage import Limits, Refusal, Reserved, Window

CountersKind = Literal["database", "memory", "redis"]


@dataclass(frozen=True)
class AnsweredCall:
    """An answered request as the usage log records it."""

    endpoint: str
    status: int
    requests: int
    rows: int


class UsageCounters(ABC):
    """Live usage counts per subject (an account id, or ``ip:<address>``) and UTC window; every
    backend implements each method (a backend missing one cannot be made)."""

    kind: CountersKind

    @abstractmethod
    def reserve(
        self, subject: str, now: dt.datetime, cost: int, limits: Limits
    ) -> Reserved | Refusal:
        """Take ``cost`` requests from the day and hour of ``now``, all or nothing, or say which
        allowance refuses them (a refused hourly request is counted as refused)."""

    @abstractmethod
    def release(self, subject: str, at: dt.datetime, cost: int) -> None:
        """Give back a reservation made at ``at``."""

    @abstractmethod
    def add_usage(self, subject: str, at: dt.datetime, *, requests: int, rows: int = 0) -> None:
        """Add requests and rows to the day and hour of ``at`` (usage counted elsewhere)."""

    @abstractmethod
    def count_answer(
        self, subject: str, at: dt.datetime, call: AnsweredCall, entities: list[str]
    ) -> tuple[int, int]:
        """Count an answer: its rows, the entities it served, a row of the usage log. The day's
        rows and distinct entities after it."""

    @abstractmethod
    def add_distinct(self, subject: str, day: dt.date, kind: str, values: list[str]) -> int:
        """Record values (entity ids, ``as_of`` dates) served on ``day``; how many now."""

    @abstractmethod
    def count_distinct(self, subject: str, day: dt.date, kind: str) -> int:
        """Distinct values of ``kind`` served to the subject on ``day``."""

    @abstractmethod
    def add_distinct_within(
        self, subject: str, day: dt.date, kind: str, value: str, allowance: int
    ) -> int | None:
        """Atomically: None when ``allowance`` distinct values are already used on ``day``
        (even if ``value`` is one of them), else record ``value`` and say how many now."""

    @abstractmethod
    def usage(self, subject: str, at: dt.datetime, window: Window) -> tuple[int, int]:
        """Requests and rows counted in the window holding ``at``."""

    @abstractmethod
    def reset(self, subject: str) -> None:
        """Forget the subject's counts and distinct values (an operator's fresh start)."""

    @abstractmethod
    def flush(self) -> None:
        """Write what is counted but not yet on the control plane."""

    @abstractmethod
    def close(self) -> None:
        """Write what is pending and stop writing."""
