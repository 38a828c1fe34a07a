"""Sending one GET to the API: its URL, the key and User-Agent headers, the retry rules of
``findata_client.retry``, the outdated-client notice, and the JSON body of the answer.

``Transport`` (httpx.Client) and ``AsyncTransport`` (httpx.AsyncClient) differ only in how
they send and sleep; every decision is shared (``Retrier``, ``_Target``). Each is given the
client's ``ApiSpec`` (the generated one): the exception class of an error body's code, the
endpoint a request is of. Each wait before
sending a request again is logged (logger ``findata_client.transport``, WARNING) with its
reason; the key is never logged (it travels in a header, and only the path is logged).
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from findata_client._version import __version__
from findata_client.api_spec import ApiSpec
from findata_client.base_errors import FindataError
from findata_client.narrowing import timeout_note
from findata_client.notices import note_client_notice
from findata_client.params import encode_params, split_target
from findata_client.retry import NARROW_FIRST, Retrier, RetryPolicy, Wait

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
USER_AGENT = f"findata-python/{__version__}"
KEY_HEADER = "X-API-Key"

Sleep = Callable[[float], None]
AsyncSleep = Callable[[float], Awaitable[None] | None]


@dataclass(frozen=True)
class Service:
    """Where the API is and who is asking: the base URL, the key (None: keyless), the
    timeout of one attempt in seconds."""

    base_url: str
    api_key: str | None
    timeout: float

    @classmethod
    def from_arguments(cls, api_key: str | None, base_url: str | None, timeout: float) -> Service:
        """Arguments first, then ``FINDATA_API_KEY`` and ``FINDATA_BASE_URL``."""
        key = api_key if api_key is not None else os.environ.get("FINDATA_API_KEY") or None
        url = base_url or os.environ.get("FINDATA_BASE_URL") or DEFAULT_BASE_URL
        return cls(url.rstrip("/"), key, timeout)

    def request(self, path_or_url: str, params: Mapping[str, Any] | None) -> _Target:
        """The URL, query and headers of a GET of a path or URL; a query string in it is
        merged with ``params`` (``params`` win), empty values dropped."""
        target, query = split_target(path_or_url)
        if not urlsplit(target).scheme:
            target = f"{self.base_url}/{target.lstrip('/')}"
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        # the key goes only to the API's own host, never to another URL a caller passes
        if self.api_key and _origin(target) == _origin(self.base_url):
            headers[KEY_HEADER] = self.api_key
        return _Target(target, encode_params({**query, **(params or {})}), headers)


@dataclass(frozen=True)
class _Target:
    url: str
    params: dict[str, str]
    headers: dict[str, str]

    @property
    def path(self) -> str:
        """The URL's path, as logs and notes name the request."""
        return urlsplit(self.url).path

    def waiting(self, wait: Wait) -> float:
        """Log a wait before sending this request again; its seconds."""
        log.warning("GET %s: %s; sending it again in %.2f s", self.path, wait.reason, wait.seconds)
        return wait.seconds


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


def _body(response: httpx.Response) -> dict[str, Any]:
    """The JSON object of a 2xx answer (an answer that is none raises ``FindataError``)."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    if not isinstance(body, dict):
        raise FindataError(
            response.status_code, None, "the answer is not a JSON object", None, response.headers
        )
    return body


def _outcome(
    spec: ApiSpec, retrier: Retrier, target: _Target, response: httpx.Response
) -> dict[str, Any] | Wait:
    """An answer's body, or the wait before the next attempt (raises when there is none)."""
    note_client_notice(response.headers)
    if response.is_success:
        return _body(response)
    error = spec.error_from_response(response)
    if error.status in NARROW_FIRST:
        endpoint = spec.endpoint_for_path(target.path)
        error.add_note(timeout_note(endpoint, target.path, target.params))
    return retrier.refused(error)


class Transport:
    """Synchronous GETs through an ``httpx.Client`` (one of ours unless one is passed)."""

    def __init__(
        self,
        service: Service,
        policy: RetryPolicy,
        spec: ApiSpec,
        sleep: Sleep | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        self.service = service
        self.policy = policy
        self.spec = spec
        self._sleep = time.sleep if sleep is None else sleep
        self._owned = http_client is None
        self._http = httpx.Client() if http_client is None else http_client

    def get(self, path_or_url: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """One GET, retried by the policy; the JSON body of its 2xx answer."""
        target = self.service.request(path_or_url, params)
        retrier = Retrier(self.policy)
        while True:
            try:
                response = self._http.get(
                    target.url,
                    params=target.params,
                    headers=target.headers,
                    timeout=self.service.timeout,
                )
            except httpx.HTTPError as exc:
                wait = retrier.failed(exc)
            else:
                outcome = _outcome(self.spec, retrier, target, response)
                if isinstance(outcome, dict):
                    return outcome
                wait = outcome
            self._sleep(target.waiting(wait))

    def close(self) -> None:
        """Close the HTTP client if it is ours."""
        if self._owned:
            self._http.close()


class AsyncTransport:
    """Asynchronous GETs through an ``httpx.AsyncClient``; ``sleep`` may be a coroutine
    function or a plain one."""

    def __init__(
        self,
        service: Service,
        policy: RetryPolicy,
        spec: ApiSpec,
        sleep: AsyncSleep | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.service = service
        self.policy = policy
        self.spec = spec
        self._sleep = sleep
        self._owned = http_client is None
        self._http = httpx.AsyncClient() if http_client is None else http_client

    async def get(
        self, path_or_url: str, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """One GET, retried by the policy; the JSON body of its 2xx answer."""
        target = self.service.request(path_or_url, params)
        retrier = Retrier(self.policy)
        while True:
            try:
                response = await self._http.get(
                    target.url,
                    params=target.params,
                    headers=target.headers,
                    timeout=self.service.timeout,
                )
            except httpx.HTTPError as exc:
                wait = retrier.failed(exc)
            else:
                outcome = _outcome(self.spec, retrier, target, response)
                if isinstance(outcome, dict):
                    return outcome
                wait = outcome
            await self._pause(target.waiting(wait))

    async def _pause(self, seconds: float) -> None:
        if self._sleep is None:
            # imported here: anyio comes with httpx, and only async users need it
            import anyio

            await anyio.sleep(seconds)
            return
        result = self._sleep(seconds)
        if inspect.isawaitable(result):
            await result

    async def aclose(self) -> None:
        """Close the HTTP client if it is ours."""
        if self._owned:
            await self._http.aclose()
