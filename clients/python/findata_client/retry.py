"""When to send a request again, and after how long (spec, "Client behaviour").

- 502, 503 and 504, network timeouts and connection failures: up to ``max_attempts`` attempts
  in all (3 by default), waiting ``0.5 s x 2^n x jitter`` between them, the jitter in [1, 1.5)
  so that waits grow and clients that failed together do not retry together.
- Every 4xx, 429 included, raises at once; so does 500 (the spec's list of retried statuses
  is 502, 503 and 504).
- Opt-in (``wait_on_rate_limit``): a 429 is waited out as the spec recommends, then sent
  again: ``retry_after_seconds`` when the body gives it, to the next UTC clock hour on
  ``hourly_usage_limit``, to 00:00 UTC on ``row_limit_exceeded`` and ``asof_limit_exceeded``.
  A 429 with none of these (``temporarily_blocked``) raises.

The decisions are pure: a ``Retrier`` is told each outcome and answers how long to wait before
the next attempt, or raises; the sync and async transports only send and sleep.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from findata_client.errors import FindataConnectionError, FindataError

RETRIED_STATUSES = frozenset({502, 503, 504})
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


def rate_limit_wait(error: FindataError, now: dt.datetime) -> float | None:
    """The spec's recommended wait before sending a 429-refused request again; None when the
    refusal is not one to wait out."""
    if error.status != 429:
        return None
    if error.retry_after_seconds is not None:
        return float(error.retry_after_seconds)
    now = now.astimezone(dt.UTC)
    if error.code in WAIT_TO_NEXT_HOUR:
        boundary = now.replace(minute=0, second=0, microsecond=0) + dt.timedelta(hours=1)
    elif error.code in WAIT_TO_MIDNIGHT:
        boundary = dt.datetime.combine(now.date() + dt.timedelta(days=1), dt.time(), dt.UTC)
    else:
        return None
    return (boundary - now).total_seconds()


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

    def failed(self, exc: Exception) -> float:
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
        return backoff_wait(self.attempts, self.policy.jitter)

    def refused(self, error: FindataError) -> float:
        """An error response: the wait before trying again, or raise it."""
        self.attempts += 1
        if error.status in RETRIED_STATUSES and self.attempts < self.policy.max_attempts:
            return backoff_wait(self.attempts, self.policy.jitter)
        if self.policy.wait_on_rate_limit and self.rate_limit_waits < RATE_LIMIT_WAITS:
            wait = rate_limit_wait(error, self.policy.clock())
            if wait is not None:
                self.rate_limit_waits += 1
                # a wait out is not a failed attempt: the 5xx attempts start again after it
                self.attempts = 0
                return wait
        raise error
