"""The dashboard's error pages: a person's browser gets a page, in the dashboard's style and
with a way back, where the API answers JSON. Routing's 404 and 405 under ``/dashboard`` (the
405 with the ``Allow`` header of the methods the address takes), and the 403 of a form without
its session's CSRF token. Everything outside ``/dashboard`` keeps the API's answers."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route

from findata.api.dashboard.deps import visitor
from findata.api.dashboard.routes import PAGES

PREFIX = "/dashboard"
TEMPLATE = "error.html"


def in_dashboard(path: str) -> bool:
    """Whether ``path`` is the dashboard's (``/dashboard`` or under it)."""
    return path == PREFIX or path.startswith(PREFIX + "/")


def dashboard_error_page(request: Request, error: HTTPException) -> Response | None:
    """The page answering routing's 404 or 405 on a dashboard address; None for any other
    address or status (the API answers those)."""
    if not in_dashboard(request.url.path) or error.status_code not in (404, 405):
        return None
    page = visitor(request)
    if error.status_code == 404:
        return page.render(
            TEMPLATE,
            status=404,
            code=404,
            title="Page not found",
            message="There is no dashboard page at this address. Check the address, or go on "
            "from the dashboard.",
        )
    allowed = allowed_methods(request)
    if "GET" in allowed:
        message = "This page only opens: it does not take a form. Open it again from the link."
    else:
        message = (
            "This address is where a dashboard form is sent; it is not a page to open. Go back "
            "to the page with the form and use its button."
        )
    response = page.render(
        TEMPLATE, status=405, code=405, title="Not a page to open", message=message
    )
    response.headers["Allow"] = ", ".join(allowed)
    return response


def csrf_refused_page(request: Request) -> Response:
    """The 403 page of a form sent without its session's CSRF token (the page was open too
    long, the session ended, or the form came from another site)."""
    return visitor(request).render(
        TEMPLATE,
        status=403,
        code=403,
        title="This form has expired",
        message="The page was open too long, or it came from somewhere else. Go back, reload "
        "the page and send the form again.",
    )


def allowed_methods(request: Request) -> list[str]:
    """The methods of every dashboard page at the request's path, sorted (the 405's
    ``Allow``)."""
    methods: set[str] = set()
    for router in PAGES:
        for route in router.routes:
            if isinstance(route, Route) and route.methods:
                match, _ = route.matches(request.scope)
                if match is not Match.NONE:
                    methods |= route.methods
    return sorted(methods)
