"""When to send a request again, and after how long: the spec's recommended retry ("Client
behaviour": "on 429 with `retry_after_seconds`, wait that long; on `hourly_usage_limit` wait to
the next UTC clock hour; on `row_limit_exceeded` and `asof_limit_exceeded` wait to 00:00 UTC; on
500, 502, 503, 504 retry a few times with growing waits (narrow the request first on 504); do
not retry other 4xx").

- 500, 502 and 503, network timeouts and connection failures: up to ``max_attempts`` attempts
  in all (3 by default), waiting ``0.5 s x 2^n x jitter`` between them, the jitter in [1, 1.5)
  so that waits grow and clients that failed together do not retry together.
- 504: never sent again unchanged ("narrow the request first"): the client cannot narrow a
  request without changing what it asks for, so the error raises at once, with a note saying
  how to narrow it (the error table's fix: "narrow the date range or ticker list").
- Every other 4xx, 429 included, raises at once.
- Opt-in (``wait_on_rate_limit``): a 429 is waited out as the spec recommends, then sent
  again: ``retry_after_seconds`` when the body gives it, to the next UTC clock hour on
  ``hourly_usage_limit``, to 00:00 UTC on ``row_limit_exceeded`` and ``asof_limit_exceeded``.
  A 429 with none of these (``temporarily_blocked``) raises.

The decisions are pure: a ``Retrier`` is told each outcome and answers the wait before the next
attempt and why, or raises; the sync and async transports only send, log and sleep.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from findata_client.base_errors import FindataConnectionError, FindataError

RETRIED_STATUSES = frozenset({500, 502, 503})
#: statuses the spec says to narrow before sending again: raised, never resent unchanged
NARROW_FIRST = frozenset({504})
FIRST_WAIT = 0.5
#: how many times one request may wait out a 429 (the server's answer after the wait should
#: be a success; a few more allow for clocks that disagree by a second)
RATE_LIMIT_WAITS = 3
WAIT_TO_NEXT_HOUR = frozenset({"hourly_usage_limit"})
WAIT_TO_MIDNIGHT = frozenset({"row_limit_exceeded", "asof_limit_exceeded"})

Clock = Callable[[], dt.datetime]


def utc_now() -> dt.datetime:
    """The current time, timezone-aware UTC (the default clock)."""
    return dt.datetime.now(dt.UTC)


def backoff_wait(retry: int, jitter: Callable[[], float] = random.random) -> float:
    """Seconds to wait before retry number ``retry`` (1 for the second attempt)."""
    return FIRST_WAIT * 2.0 ** (retry - 1) * (1 + jitter() / 2)


def is_transient(exc: Exception) -> bool:
    """Whether a failed send is worth another attempt: a timeout, a connection that failed or
    was dropped without an answer."""
    return isinstance(exc, httpx.TimeoutException | httpx.NetworkError | httpx.RemoteProtocolError)


@dataclass(frozen=True)
class Wait:
    """How long to wait before the next attempt, and why (for the log)."""

    seconds: float
    reason: str


def _refusal(error: FindataError) -> str:
    return f"{error.status} {error.code}" if error.code else f"{error.status} (not the API's body)"


def rate_limit_wait(error: FindataError, now: dt.datetime) -> Wait | None:
    """The spec's recommended wait before sending a 429-refused request again; None when the
    refusal is not one to wait out."""
    if error.status != 429:
        return None
    if error.retry_after_seconds is not None:
        return Wait(float(error.retry_after_seconds), f"{_refusal(error)}: retry_after_seconds")
    now = now.astimezone(dt.UTC)
    if error.code in WAIT_TO_NEXT_HOUR:
        boundary = now.replace(minute=0, second=0, microsecond=0) + dt.timedelta(hours=1)
        until = "the next UTC clock hour"
    elif error.code in WAIT_TO_MIDNIGHT:
        boundary = dt.datetime.combine(now.date() + dt.timedelta(days=1), dt.time(), dt.UTC)
        until = "00:00 UTC"
    else:
        return None
    return Wait((boundary - now).total_seconds(), f"{_refusal(error)}: waiting to {until}")


@dataclass(frozen=True)
class RetryPolicy:
    """How a client retries: attempts for transient failures, whether 429s are waited out,
    and the clock the waits to a UTC boundary are counted from."""

    max_attempts: int = 3
    wait_on_rate_limit: bool = False
    clock: Clock = utc_now
    jitter: Callable[[], float] = random.random

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")


@dataclass
class Retrier:
    """One request's attempts: each outcome in, the wait before the next attempt out."""

    policy: RetryPolicy
    attempts: int = 0
    rate_limit_waits: int = 0

    def failed(self, exc: Exception) -> Wait:
        """The send raised: the wait before trying again, or raise (a connection error once
        the attempts are used up; anything not transient as it is)."""
        self.attempts += 1
        if not is_transient(exc):
            raise exc
        if self.attempts >= self.policy.max_attempts:
            raise FindataConnectionError(
                f"no answer after {self.attempts} attempt(s): {type(exc).__name__}: {exc}",
                self.attempts,
            ) from exc
        return self._backoff(f"{type(exc).__name__} (no answer)")

    def refused(self, error: FindataError) -> Wait:
        """An error response: the wait before trying again, or raise it."""
        self.attempts += 1
        if error.status in RETRIED_STATUSES and self.attempts < self.policy.max_attempts:
            return self._backoff(_refusal(error))
        if self.policy.wait_on_rate_limit and self.rate_limit_waits < RATE_LIMIT_WAITS:
            wait = rate_limit_wait(error, self.policy.clock())
            if wait is not None:
                self.rate_limit_waits += 1
                # a wait out is not a failed attempt: the 5xx attempts start again after it
                self.attempts = 0
                return wait
        raise error

    def _backoff(self, cause: str) -> Wait:
        seconds = backoff_wait(self.attempts, self.policy.jitter)
        return Wait(seconds, f"{cause}, attempt {self.attempts} of {self.policy.max_attempts}")
