"""The dashboard in the API's app: its services, pages, static files and the answers to a
visitor who must sign in first or posted a form without its CSRF token."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.staticfiles import StaticFiles
from starlette.responses import HTMLResponse, RedirectResponse, Response

from findata.accounts.counters import UsageCounters
from findata.accounts.store import AccountStore
from findata.api.dashboard.page import SECURITY_HEADERS, CsrfRefused, Redirect
from findata.api.dashboard.routes import billing, keys, people, usage, webhooks
from findata.api.dashboard.services import STATIC, build_services
from findata.clock import Clock
from findata.settings import Settings

#: the dashboard's pages, one router per concern
PAGES = (people.router, keys.router, usage.router, billing.router, webhooks.router)
CSRF_REFUSED = (
    "<!doctype html><title>Form expired · findata</title><h1>This form has expired</h1>"
    "<p>The page was open too long, or it came from somewhere else. Go back, reload the page "
    "and send the form again.</p><p><a href='/dashboard'>Dashboard</a></p>"
)


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
    app.add_exception_handler(Redirect, _redirect)
    app.add_exception_handler(CsrfRefused, _csrf_refused)


def _to_dashboard() -> Response:
    return RedirectResponse("/dashboard", status_code=307)


async def _redirect(_request: Request, error: Exception) -> Response:
    assert isinstance(error, Redirect)
    return RedirectResponse(error.url, status_code=303, headers=SECURITY_HEADERS)


async def _csrf_refused(_request: Request, _error: Exception) -> Response:
    return HTMLResponse(CSRF_REFUSED, status_code=403, headers=SECURITY_HEADERS)
