"""The hand-written base of ``Client`` and ``AsyncClient`` (``SyncClientBase``,
``AsyncClientBase``): the constructor, ``get`` (one request, its JSON body), ``paginate`` (every
page of a list request), closing, and the two calls every generated endpoint method makes
(``_call_body``, ``_call_rows``). The clients themselves, one method per endpoint contract, are
generated into ``findata_client.client`` as subclasses of these, each naming its ``ApiSpec``
(``spec``); nothing here imports a generated module.

Endpoint methods of list endpoints (prices, fundamentals, ..., search, index, changes) return
a result of rows across pages (``Rows``, whose first page the call fetches, so an error response
raises there; ``AsyncRows`` on the async client: ``await`` it for every row, the first page's
error raising at the ``await``, or ``async for`` over it);
the others (resolve, status, usage) return the response body, a ``dict``, whose ``warnings``
are also emitted as ``FindataWarning``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any, ClassVar, Self

import httpx

from findata_client.api_spec import ApiSpec
from findata_client.endpoints import EndpointInfo
from findata_client.notices import warn_body_warnings
from findata_client.params import encode_params, fill_path, split_target
from findata_client.results import AsyncRows, Rows
from findata_client.retry import Clock, RetryPolicy, utc_now
from findata_client.transport import AsyncSleep, AsyncTransport, Service, Sleep, Transport


def _policy(max_attempts: int, wait_on_rate_limit: bool, clock: Clock | None) -> RetryPolicy:
    return RetryPolicy(
        max_attempts=max_attempts,
        wait_on_rate_limit=wait_on_rate_limit,
        clock=utc_now if clock is None else clock,
    )


def _list_request(
    spec: ApiSpec, path_or_url: str, params: Mapping[str, Any] | None
) -> tuple[str, dict[str, str], EndpointInfo | None]:
    """A list request's path, its query (the URL's merged with ``params``) and its endpoint
    (None for a path no contract has: read as one page)."""
    path, query = split_target(path_or_url)
    return path, encode_params({**query, **(params or {})}), spec.endpoint_for_path(path)


class SyncClientBase:
    """A synchronous client of the findata API, without its endpoint methods (``Client``, the
    generated subclass, has them).

    ``api_key``: the key sent in ``X-API-Key`` (default ``$FINDATA_API_KEY``; with neither, or
    ``""``, requests are keyless). ``base_url``: default ``$FINDATA_BASE_URL``, else
    ``http://127.0.0.1:8000``. ``timeout``: seconds per attempt. ``max_attempts``: attempts in
    all for 500/502/503 and network failures (a 504 is never resent).
    ``wait_on_rate_limit``: wait out 429s as the spec recommends instead of raising.
    ``clock`` (a callable returning an aware UTC datetime) and ``sleep`` (a callable taking
    seconds) replace the real ones, e.g. in tests. ``http_client``: an ``httpx.Client`` to
    send through (not closed by ``close``).
    """

    #: the endpoints and error classes the client runs on (set by the generated subclass)
    spec: ClassVar[ApiSpec]

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        timeout: float = 30.0,
        wait_on_rate_limit: bool = False,
        max_attempts: int = 3,
        clock: Clock | None = None,
        sleep: Sleep | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        self._transport = Transport(
            Service.from_arguments(api_key, base_url, timeout),
            _policy(max_attempts, wait_on_rate_limit, clock),
            self.spec,
            sleep,
            http_client,
        )

    @property
    def base_url(self) -> str:
        """The API's base URL."""
        return self._transport.service.base_url

    def get(self, path_or_url: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """One GET of a path (``/v1/prices``), a path with a query string or a full URL, with
        ``params`` merged into its query (empty values dropped); the JSON body of the answer,
        as it is (its ``warnings`` are not emitted). Raises the ``FindataError`` subclass of an
        error answer."""
        return self._transport.get(path_or_url, params)

    def paginate(self, path_or_url: str, params: Mapping[str, Any] | None = None) -> Rows:
        """Every page of a list request, by its endpoint's paging (fetched when read)."""
        path, query, endpoint = _list_request(self.spec, path_or_url, params)
        return Rows(self._transport.get, path, query, endpoint)

    def _call_body(
        self, endpoint: str, path: Mapping[str, Any], query: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The whole body of a one-response endpoint (its warnings emitted)."""
        body = self.get(fill_path(self.spec.endpoint(endpoint).paths, path), query)
        warn_body_warnings(body.get("warnings") or [], set())
        return body

    def _call_rows(self, endpoint: str, path: Mapping[str, Any], query: Mapping[str, Any]) -> Rows:
        """The rows of a list endpoint across its pages, the first fetched now."""
        info = self.spec.endpoint(endpoint)
        rows = Rows(self._transport.get, fill_path(info.paths, path), encode_params(query), info)
        # the first page now, so that a refused request raises at the call, not at first read
        rows.first_page  # noqa: B018
        return rows

    def close(self) -> None:
        """Close the connections (of an HTTP client the client made itself)."""
        self._transport.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class AsyncClientBase:
    """An asynchronous client of the findata API, without its endpoint methods (``AsyncClient``,
    the generated subclass, has them): ``Client``'s constructor and methods, with
    ``await`` on ``get`` and the one-response endpoints; list methods and ``paginate`` return
    ``AsyncRows`` at once: ``await`` it (every row), ``await ....to_pandas()``, or
    ``async for row in ...``. ``sleep`` may be a coroutine function;
    ``http_client`` an ``httpx.AsyncClient``. ``async with`` or ``await aclose()``.
    """

    #: the endpoints and error classes the client runs on (set by the generated subclass)
    spec: ClassVar[ApiSpec]

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        timeout: float = 30.0,
        wait_on_rate_limit: bool = False,
        max_attempts: int = 3,
        clock: Clock | None = None,
        sleep: AsyncSleep | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self._transport = AsyncTransport(
            Service.from_arguments(api_key, base_url, timeout),
            _policy(max_attempts, wait_on_rate_limit, clock),
            self.spec,
            sleep,
            http_client,
        )

    @property
    def base_url(self) -> str:
        """The API's base URL."""
        return self._transport.service.base_url

    async def get(
        self, path_or_url: str, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """``Client.get``, awaited."""
        return await self._transport.get(path_or_url, params)

    def paginate(self, path_or_url: str, params: Mapping[str, Any] | None = None) -> AsyncRows:
        """Every page of a list request, by its endpoint's paging (fetched when read)."""
        path, query, endpoint = _list_request(self.spec, path_or_url, params)
        return AsyncRows(self._transport.get, path, query, endpoint)

    async def _call_body(
        self, endpoint: str, path: Mapping[str, Any], query: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The whole body of a one-response endpoint (its warnings emitted)."""
        body = await self.get(fill_path(self.spec.endpoint(endpoint).paths, path), query)
        warn_body_warnings(body.get("warnings") or [], set())
        return body

    def _call_rows(
        self, endpoint: str, path: Mapping[str, Any], query: Mapping[str, Any]
    ) -> AsyncRows:
        """The rows of a list endpoint across its pages (fetched when read)."""
        info = self.spec.endpoint(endpoint)
        url = fill_path(info.paths, path)
        return AsyncRows(self._transport.get, url, encode_params(query), info)

    async def aclose(self) -> None:
        """Close the connections (of an HTTP client the client made itself)."""
        await self._transport.aclose()

    async def close(self) -> None:
        """``aclose``."""
        await self.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
