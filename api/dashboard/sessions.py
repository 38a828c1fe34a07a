"""The dashboard's session cookie, signed: the CSRF token of the session's forms, the notice for
the next page, and, once signed in, the random token of the session's record in the control
plane (``accounts/sessions.py``: who is signed in, until when; sign-out deletes it, so a copy of
the cookie saved before is worth nothing after).

The cookie is HttpOnly, SameSite=Lax, limited to ``/dashboard`` (API requests never carry it)
and Secure when the page is served over https.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass, field

from itsdangerous import BadSignature, URLSafeSerializer
from starlette.requests import Request
from starlette.responses import Response

from findata.accounts.sessions import LIFETIME

COOKIE = "findata_session"
COOKIE_PATH = "/dashboard"


@dataclass
class Session:
    """One browser's session: anonymous (only a CSRF token) or signed in (``token`` names its
    record)."""

    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    token: str | None = None
    notice: str | None = None  # shown once, on the next page (after a redirect)
    changed: bool = False

    def tell(self, notice: str) -> None:
        """Show ``notice`` on the next page rendered."""
        self.notice = notice
        self.changed = True

    def take_notice(self) -> str | None:
        """The notice to show now (then forgotten)."""
        notice, self.notice = self.notice, None
        if notice is not None:
            self.changed = True
        return notice

    def sign_in(self, token: str) -> None:
        """Carry the new session record's ``token`` (a new CSRF token: nothing from before
        carries over)."""
        self.csrf = secrets.token_urlsafe(32)
        self.token = token
        self.changed = True

    def sign_out(self) -> None:
        """Forget the session record (the caller ends it when it still exists)."""
        self.csrf = secrets.token_urlsafe(32)
        self.token = None
        self.changed = True

    def csrf_matches(self, presented: str | None) -> bool:
        """The form carries this session's token (compared in constant time)."""
        return bool(presented) and hmac.compare_digest(self.csrf, presented or "")


class SessionCookies:
    """Reads and writes session cookies with the server's secret."""

    def __init__(self, secret: bytes) -> None:
        self._serializer = URLSafeSerializer(secret, salt="findata.dashboard.session")

    def read(self, request: Request) -> Session:
        """The request's session; a new anonymous one when there is none or it is forged."""
        raw = request.cookies.get(COOKIE)
        if raw:
            try:
                data = self._serializer.loads(raw)
                return Session(csrf=data["csrf"], token=data.get("sid"), notice=data.get("notice"))
            except (BadSignature, KeyError, TypeError):
                pass
        return Session(changed=True)

    def write(self, request: Request, response: Response, session: Session) -> None:
        """Set the cookie when the session changed."""
        if not session.changed:
            return
        value = self._serializer.dumps(
            {"csrf": session.csrf, "sid": session.token, "notice": session.notice}
        )
        response.set_cookie(
            COOKIE,
            value,
            max_age=int(LIFETIME.total_seconds()),
            path=COOKIE_PATH,
            httponly=True,
            samesite="lax",
            secure=request.url.scheme == "https",
        )
