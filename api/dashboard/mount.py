"""The dashboard in the API's app: its services, pages, static files, the site's icon, and the
answers to a visitor who must sign in first or posted a form without its CSRF token (routing's
404 and 405 pages: ``errors.dashboard_error_page``, called by the app's handler)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.staticfiles import StaticFiles
from starlette.responses import FileResponse, RedirectResponse, Response

from findata.accounts.counters import UsageCounters
from findata.accounts.store import AccountStore
from findata.api.dashboard.errors import csrf_refused_page
from findata.api.dashboard.page import SECURITY_HEADERS, CsrfRefused, Redirect
from findata.api.dashboard.routes import PAGES
from findata.api.dashboard.services import STATIC, build_services
from findata.clock import Clock
from findata.settings import Settings

FAVICON = STATIC / "favicon.ico"


def mount_dashboard(
    app: FastAPI,
    settings: Settings,
    clock: Clock,
    accounts: AccountStore,
    counters: UsageCounters,
) -> None:
    """Serve the dashboard under ``/dashboard`` (``/`` leads there) on the app's control plane."""
    app.state.dashboard = build_services(settings, accounts.engine, clock, accounts, counters)
    app.mount("/dashboard/static", StaticFiles(directory=STATIC), name="dashboard-static")
    for router in PAGES:
        app.include_router(router)
    app.add_api_route("/", _to_dashboard, methods=["GET"], include_in_schema=False)
    # browsers ask every site for its icon: a real one, rather than a 404 on every first visit
    app.add_api_route("/favicon.ico", _favicon, methods=["GET"], include_in_schema=False)
    app.add_exception_handler(Redirect, _redirect)
    app.add_exception_handler(CsrfRefused, _csrf_refused)


def _to_dashboard() -> Response:
    return RedirectResponse("/dashboard", status_code=307)


def _favicon() -> Response:
    return FileResponse(
        FAVICON, media_type="image/x-icon", headers={"Cache-Control": "public, max-age=86400"}
    )


async def _redirect(_request: Request, error: Exception) -> Response:
    assert isinstance(error, Redirect)
    return RedirectResponse(error.url, status_code=303, headers=SECURITY_HEADERS)


async def _csrf_refused(request: Request, _error: Exception) -> Response:
    return csrf_refused_page(request)
