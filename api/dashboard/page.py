"""One dashboard request as a route sees it (``Page``): the services, the session, the person
signed in; and its answers: a rendered page or a redirect, with the session cookie and the
security headers every dashboard response carries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from findata.accounts.logins import Person
from findata.api.dashboard.services import DashboardServices
from findata.api.dashboard.sessions import Session

#: nothing from another host; no framing; no referrer (a verification link holds a token)
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # pages show keys and secrets once: never kept by a cache or the back button's store
    "Cache-Control": "no-store",
}


def form_text(form: FormData, name: str) -> str:
    """The posted field ``name`` as text ("" when it is absent or a file)."""
    value = form.get(name)
    return value if isinstance(value, str) else ""


class Redirect(Exception):
    """Answer with a redirect to ``url`` (a dependency's way to send a visitor elsewhere)."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url


class CsrfRefused(Exception):
    """A state-changing form without this session's CSRF token."""


@dataclass
class Page:
    """The request, the services, the session and the person (None when signed out)."""

    request: Request
    services: DashboardServices
    session: Session
    person: Person | None

    @property
    def signed_in(self) -> Person:
        """The person signed in (routes that depend on ``Member`` always have one)."""
        assert self.person is not None
        return self.person

    async def form(self) -> FormData:
        """The posted form, its CSRF token checked (``CsrfRefused`` otherwise)."""
        form = await self.request.form()
        token = form.get("csrf_token")
        if not self.session.csrf_matches(token if isinstance(token, str) else None):
            raise CsrfRefused()
        return form

    def sign_in(self, account_id: str) -> None:
        """Start a session of the account (a record the cookie names); a session this browser
        had before is ended."""
        self.sign_out()
        self.session.sign_in(self.services.sessions.start(account_id))

    def sign_out(self) -> None:
        """End the session: its record is deleted, so a saved copy of the cookie is refused."""
        if self.session.token is not None:
            self.services.sessions.end(self.session.token)
            self.session.sign_out()

    def hold_once(self, purpose: str, **payload: Any) -> None:
        """Keep ``payload`` (a key or secret to show once) for the page of ``purpose``."""
        assert self.session.token is not None
        self.services.sessions.hold_once(self.session.token, purpose, payload)

    def take_once(self, purpose: str) -> dict[str, Any]:
        """What was held for the page of ``purpose`` (empty when nothing), no longer held."""
        if self.session.token is None:
            return {}
        return self.services.sessions.take_once(self.session.token, purpose) or {}

    def render(self, template: str, status: int = 200, **context: Any) -> Response:
        """The page ``template`` with the common context (person, plan, CSRF token, notice)."""
        response = self.services.templates.TemplateResponse(
            self.request,
            template,
            {
                "person": self.person,
                "csrf_token": self.session.csrf,
                "notice": self.session.take_notice(),
                **context,
            },
            status_code=status,
        )
        return self.finish(response)

    def confirm(
        self,
        *,
        title: str,
        message: str,
        button: str,
        back: str,
        fields: dict[str, str] | None = None,
    ) -> Response:
        """The confirmation step of a destructive action, without JavaScript: a page whose
        form (``fields`` hidden in it) POSTs to this same address; Cancel leads to ``back``."""
        return self.render(
            "confirm.html",
            title=title,
            message=message,
            button=button,
            back=back,
            fields=fields or {},
            action=self.request.url.path,
        )

    def redirect(self, url: str, notice: str | None = None) -> Response:
        """A 303 to ``url`` (after a form: the browser then GETs it), which shows ``notice``."""
        if notice is not None:
            self.session.tell(notice)
        return self.finish(RedirectResponse(url, status_code=303))

    def finish(self, response: Response) -> Response:
        """The security headers and the session cookie on ``response``."""
        response.headers.update(SECURITY_HEADERS)
        self.services.cookies.write(self.request, response, self.session)
        return response
