"""A polite HTTP client for the SEC: a declared identity, one shared rate, gzip, conditional
requests, backoff, and bodies checked before they count as fetched.

The SEC's fair-access rules (https://www.sec.gov/os/accessing-edgar-data): a User-Agent naming
who fetches and how to reach them, at most 10 requests a second, and only what is needed. An
address that goes over is answered 429 or 403 ("Request Rate Threshold Exceeded") and blocked for
about ten minutes: each such answer halves the shared rate (``rate_limit.py``) and the request
is retried with exponential backoff (tenacity), waiting at least what ``Retry-After`` asks; when
every retry was refused, the fetch stops with ``SecBlocked``, saying so.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import httpx
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential_jitter,
)

from findata.sources.edgar.bodies import Kind, UnexpectedBody, check_body
from findata.sources.edgar.rate_limit import SharedRateLimit

#: "Company contact@example.com": some name, then an e-mail address
_IDENTITY = re.compile(r"^\S.*\s\S+@\S+\.\S+$")


class MissingIdentity(Exception):
    """No usable ``FINDATA_SEC_USER_AGENT``: the SEC asks every client to say who it is."""


class SecBlocked(Exception):
    """The SEC kept refusing requests (429/403) through every retry."""


class SecFetchError(Exception):
    """A request that still failed after its retries (a 5xx, a broken body, a status the
    fetcher does not expect)."""


class _Retryable(Exception):
    def __init__(self, reason: str, *, refused: bool = False, retry_after: float | None = None):
        super().__init__(reason)
        self.refused = refused
        self.retry_after = retry_after


def checked_identity(user_agent: str | None) -> str:
    """``user_agent`` when it names someone and an address; else ``MissingIdentity``."""
    if not user_agent or not _IDENTITY.match(user_agent.strip()):
        raise MissingIdentity(
            "fetching from the SEC needs FINDATA_SEC_USER_AGENT set to who you are and how to "
            "reach you, e.g. FINDATA_SEC_USER_AGENT='Example Co admin@example.com' (the SEC's "
            "fair-access rules; requests without it are refused)"
        )
    return user_agent.strip()


@dataclass
class RequestCounts:
    """What a fetch asked of the SEC (shared by its threads)."""

    requests: int = 0
    retries: int = 0
    not_modified: int = 0
    missing: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **amounts: int) -> None:
        """Add to the named counts."""
        with self._lock:
            for name, amount in amounts.items():
                setattr(self, name, getattr(self, name) + amount)


@dataclass(frozen=True)
class Download:
    """A request's outcome: a new body written to the path asked for, not modified since the
    validators given, or missing (404)."""

    status: Literal["new", "not_modified", "missing"]
    etag: str | None = None
    last_modified: str | None = None


class EdgarClient:
    """Requests to the SEC under one identity and the home's shared rate."""

    def __init__(
        self,
        user_agent: str,
        limit: SharedRateLimit,
        *,
        retries: int,
        sleep: Callable[[float], None] = time.sleep,
        timeout_seconds: float = 60.0,
    ) -> None:
        self.limit = limit
        self.counts = RequestCounts()
        self._retries = retries
        self._sleep = sleep
        self._backoff = wait_exponential_jitter(initial=1, max=60)
        # httpx asks for gzip and decodes it; one connection pool for the fetch's threads
        self._http = httpx.Client(
            headers={"User-Agent": user_agent, "Accept-Encoding": "gzip, deflate"},
            timeout=timeout_seconds,
            follow_redirects=True,
        )

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def download(
        self,
        url: str,
        kind: Kind,
        into: Path,
        *,
        etag: str | None = None,
        last_modified: str | None = None,
    ) -> Download:
        """GET ``url`` into the file ``into`` (a body checked to be a whole ``kind``), or say it
        is not modified since ``etag``/``last_modified``, or missing."""
        retrying = Retrying(
            stop=stop_after_attempt(self._retries + 1),
            wait=self._wait,
            retry=retry_if_exception_type((_Retryable, httpx.TransportError)),
            sleep=self._sleep,
            before_sleep=lambda _: self.counts.add(retries=1),
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    return self._once(url, kind, into, etag, last_modified)
        except _Retryable as error:
            if error.refused:
                raise SecBlocked(
                    f"the SEC refused {self._retries + 1} requests in a row for {url} "
                    f"({error}): it blocks an address for about ten minutes after more than "
                    "10 requests a second or requests without a declared User-Agent. Wait, "
                    "check FINDATA_SEC_USER_AGENT, and lower FINDATA_SEC_REQUESTS_PER_SECOND"
                ) from error
            raise SecFetchError(f"{url}: {error} (after {self._retries} retries)") from error
        except httpx.TransportError as error:
            raise SecFetchError(f"{url}: {error!r} (after {self._retries} retries)") from error
        raise AssertionError("unreachable: tenacity returns or raises")

    def _wait(self, state: RetryCallState) -> float:
        backoff = self._backoff(state)
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, _Retryable) and error.retry_after is not None:
            return max(backoff, error.retry_after)
        return backoff

    def _once(
        self, url: str, kind: Kind, into: Path, etag: str | None, last_modified: str | None
    ) -> Download:
        headers = {}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        self.limit.acquire()
        self.counts.add(requests=1)
        with self._http.stream("GET", url, headers=headers) as response:
            status = response.status_code
            if status == 304:
                self.counts.add(not_modified=1)
                return Download("not_modified", etag, last_modified)
            if status == 404:
                self.counts.add(missing=1)
                return Download("missing")
            if status in (403, 429):
                self.limit.lower()
                raise _Retryable(
                    f"{status} {response.reason_phrase}",
                    refused=True,
                    retry_after=_retry_after(response.headers.get("Retry-After")),
                )
            if status >= 500:
                raise _Retryable(f"{status} {response.reason_phrase}")
            if status != 200:
                raise SecFetchError(f"{url} answered {status} {response.reason_phrase}")
            with into.open("wb") as file:
                for chunk in response.iter_bytes():
                    file.write(chunk)
            validators = response.headers.get("ETag"), response.headers.get("Last-Modified")
        try:
            check_body(kind, into)
        except UnexpectedBody as error:
            into.unlink(missing_ok=True)
            raise _Retryable(f"the body is {error}") from error
        return Download("new", *validators)


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds (the SEC sends seconds when it sends one)."""
    if value is None:
        return None
    try:
        return min(600.0, max(0.0, float(value)))
    except ValueError:
        return None
