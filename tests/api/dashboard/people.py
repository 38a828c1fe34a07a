"""A person using the dashboard over plain HTTP (httpx with a cookie jar): the forms' CSRF
token read from the page, as a browser would send it."""

from __future__ import annotations

import re
import uuid

import httpx
from starlette.routing import Route

from findata.api.dashboard.mount import PAGES
from tests.api.server import RunningApi

PASSWORD = "correct horse battery"
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


class DashboardUser:
    """One browser's session on the dashboard."""

    def __init__(self, running: RunningApi, email: str | None = None) -> None:
        self.running = running
        self.email = email or f"{uuid.uuid4().hex[:12]}@example.com"
        self.http = httpx.Client(base_url=running.url, timeout=30, follow_redirects=False)

    def csrf(self, path: str = "/dashboard/sign-in") -> str:
        """The CSRF token of the session, read from a page's form."""
        page = self.http.get(path)
        match = CSRF.search(page.text)
        assert match, (path, page.status_code, page.text[:300])
        return match.group(1)

    def post(
        self, path: str, data: dict[str, str] | None = None, *, form_page: str = ""
    ) -> httpx.Response:
        """POST a form with the session's CSRF token (read from ``form_page``)."""
        token = self.csrf(form_page or "/dashboard/sign-in")
        return self.http.post(path, data={"csrf_token": token, **(data or {})})

    def sign_up(self, *, verified: bool = True) -> str:
        """A new Free account, signed in (the address confirmed through the app's own token
        unless ``verified`` is false); returns its account id."""
        answer = self.post(
            "/dashboard/sign-up", {"email": self.email, "password": PASSWORD},
            form_page="/dashboard/sign-up",
        )  # fmt: skip
        assert answer.status_code == 303, answer.text
        account = self.running.store.find_account_by_email(self.email)
        assert account is not None
        if verified:
            logins = self.running.app.state.dashboard.logins
            logins.verify_email(logins.verification_token(account.id))
        return account.id

    def sign_in(self, password: str = PASSWORD) -> httpx.Response:
        """Send the sign-in form."""
        return self.post("/dashboard/sign-in", {"email": self.email, "password": password})

    def close(self) -> None:
        self.http.close()


def dashboard_posts() -> list[str]:
    """Every form the dashboard accepts (its routes answering POST)."""
    return sorted(
        route.path
        for router in PAGES
        for route in router.routes
        if isinstance(route, Route) and "POST" in (route.methods or ())
    )
