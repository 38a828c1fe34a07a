"""The FastAPI application factory: front door, error handlers, routes.

``findata serve`` runs ``create_app`` under uvicorn (``factory=True``) in each worker.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import sqlalchemy as sa
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.routing import Route

from findata.accounts.counters import usage_counters_for
from findata.accounts.store import AccountStore
from findata.api.auth import authenticate, read_key
from findata.api.cache import response_cache
from findata.api.client_notices import NOTICED_ERRORS, notice_headers
from findata.api.cut_requests import AnswerCutRequests
from findata.api.dashboard.errors import dashboard_error_page
from findata.api.dashboard.mount import mount_dashboard
from findata.api.data_requests import Serving
from findata.api.errors import (
    ApiError,
    BadRequest,
    MethodNotAllowed,
    UnknownEndpoint,
    error_response,
)
from findata.api.front_door import API_PREFIX, FrontDoor
from findata.api.generate import add_contract_routes
from findata.api.health import healthz, readyz
from findata.api.mcp.server import MCP_PATH, McpEndpoint
from findata.api.paging import CursorCodec, cursor_secret
from findata.api.prometheus import METRICS_PATH, ApiMetrics, mark_worker_dead, metrics_route
from findata.api.published import PublishedData
from findata.api.quotas import Quotas, Sleep
from findata.api.response_docs import without_validation_errors
from findata.api.row_store import RowStore
from findata.clock import Clock, get_clock
from findata.control_plane.database import engine_for
from findata.logs import skip_unused_record_fields
from findata.published.bucket import bucket_for
from findata.published.fetching import VersionFetches
from findata.settings import Settings, get_settings

log = logging.getLogger("findata.api")


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """What runs while the app serves: the current version opened in the background, the MCP
    transports' task groups; at the end, usage written, version files closed, and this
    worker's live metrics let go."""
    app.state.published.warm_in_background()
    async with app.state.mcp.running():
        yield
    app.state.counters.close()  # the usage counted but not yet written
    app.state.published.close()
    mark_worker_dead()


def create_app(
    settings: Settings | None = None, clock: Clock | None = None, sleep: Sleep | None = None
) -> FastAPI:
    """The API on the control plane of ``settings`` (from the environment by default); tests
    pass a ``ManualClock`` and a ``sleep`` that records the slow-downs instead of waiting."""
    settings = settings or get_settings()
    app = FastAPI(
        lifespan=_lifespan,
        # a path with a slash more or less is an unknown path (the spec's 401 or 404), not a
        # redirect: Starlette's would name the host of the request's Host header
        redirect_slashes=False,
        title="findata",
        version="1",
        summary="Financial data: prices, fundamentals, filings, index rosters, point in time.",
    )
    app.state.settings = settings
    app.state.clock = clock or get_clock()
    app.state.engine = engine_for(settings.control_plane_url)
    app.state.accounts = AccountStore(app.state.engine, app.state.clock)
    app.state.published = PublishedData(
        app.state.engine,
        settings.published_dir,
        app.state.clock,
        dt.timedelta(seconds=settings.version_idle_seconds),
        RowStore(int(settings.row_store_mb * 2**20)),
        _version_fetches(settings, app.state.engine),
        served_copy_bytes=int(settings.served_tables_mb * 2**20),
    )
    app.state.cursors = CursorCodec(cursor_secret(settings.cursor_secret, settings.home_dir))
    app.state.cache = response_cache(settings.cache_url, int(settings.response_cache_mb * 2**20))
    app.state.metrics = ApiMetrics() if settings.metrics_enabled else None
    skip_unused_record_fields()  # in each worker: a spawned worker starts with the defaults
    app.state.counters = usage_counters_for(
        settings.counters_kind, app.state.engine, settings.cache_url
    )
    app.state.quotas = (
        Quotas(
            app.state.counters,
            app.state.engine,
            app.state.clock,
            time.sleep if sleep is None else sleep,
            app.state.metrics,
        )
        if settings.quotas_enabled
        else None
    )
    app.state.serving = Serving(
        published=app.state.published,
        cursors=app.state.cursors,
        cache=app.state.cache,
        quotas=app.state.quotas,
        clock=app.state.clock,
        control_plane=app.state.engine,
        counters=app.state.counters,
        client_latest_version=settings.client_latest_version,
        request_timeout_seconds=settings.request_timeout_seconds,
        query_timeout_seconds=settings.query_timeout_seconds,
        metrics=app.state.metrics,
    )

    app.state.mcp = McpEndpoint(app.state.serving, app.state.accounts, settings.mcp_result_bytes)
    # a route of its own (a mount at /mcp would redirect POST /mcp to /mcp/); every method
    # reaches it, so its 405 names the one it accepts
    app.router.routes.append(Route(MCP_PATH, endpoint=app.state.mcp))
    # for operators, outside /v1/ and the OpenAPI document: no key, no quota (api/health.py,
    # api/prometheus.py)
    app.router.routes.append(Route("/healthz", endpoint=healthz, methods=["GET"]))
    app.router.routes.append(Route("/readyz", endpoint=readyz, methods=["GET"]))
    app.router.routes.append(Route(METRICS_PATH, endpoint=metrics_route, methods=["GET"]))

    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_exception)
    app.add_middleware(AnswerCutRequests)  # inside the front door: its 503 is counted and logged
    app.add_middleware(FrontDoor, metrics=app.state.metrics, request_log=settings.request_log)

    add_contract_routes(app.router)
    generated_openapi = app.openapi
    app.openapi = lambda: without_validation_errors(generated_openapi())  # type: ignore[method-assign]
    mount_dashboard(app, settings, app.state.clock, app.state.accounts, app.state.counters)
    return app


def _version_fetches(settings: Settings, engine: sa.Engine) -> VersionFetches | None:
    """The host's copy of the bucket's versions, when they are in one (``published_url``)."""
    bucket = bucket_for(settings)
    return None if bucket is None else VersionFetches(bucket, settings.published_dir, engine)


async def _api_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, ApiError)
    response = error_response(error)
    if getattr(request.state, "data_endpoint", False) and error.code in NOTICED_ERRORS:
        latest = request.app.state.settings.client_latest_version
        response.headers.update(notice_headers(request.headers.get("user-agent"), latest))
    return response


async def _validation_error(_request: Request, error: Exception) -> Response:
    """FastAPI's 422 never reaches a client: the first problem becomes the spec's 400."""
    assert isinstance(error, RequestValidationError)
    problem = error.errors()[0] if error.errors() else {}
    where = ".".join(str(part) for part in problem.get("loc", ()) if part != "query")
    return error_response(BadRequest(f"Invalid {where}: {problem.get('msg', 'invalid value')}"))


async def _http_exception(request: Request, error: Exception) -> Response:
    """Routing's own answers in the spec's words (pages under ``/dashboard``); the key is
    checked before the path."""
    assert isinstance(error, HTTPException)
    page = dashboard_error_page(request, error)
    if page is not None:
        return page
    if error.status_code == 405:
        return error_response(MethodNotAllowed())
    if error.status_code == 404:
        try:
            if request.url.path.startswith(API_PREFIX):
                reading = read_key(request.headers, request.query_params)
                authenticate(reading, request.app.state.accounts, "required")
            raise UnknownEndpoint()
        except ApiError as refused:
            return error_response(refused)
    log.warning("unexpected HTTP %s from routing on %s", error.status_code, request.url.path)
    return error_response(BadRequest(str(error.detail)))
