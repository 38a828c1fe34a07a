"""Dashboard sessions in a signed cookie: who is signed in, the password stamp they signed in
under (a password change ends every other session), and the CSRF token of the session's forms.

The cookie is HttpOnly, SameSite=Lax, limited to ``/dashboard`` (API requests never carry it)
and Secure when the page is served over https. Its age is checked against the app's clock.
"""

from __future__ import annotations

import datetime as dt
import hmac
import secrets
from dataclasses import dataclass, field

from itsdangerous import BadSignature, URLSafeSerializer
from starlette.requests import Request
from starlette.responses import Response

COOKIE = "findata_session"
COOKIE_PATH = "/dashboard"
#: a session lasts this long after sign-in
LIFETIME = dt.timedelta(days=14)


@dataclass
class Session:
    """One browser's session: anonymous (only a CSRF token) or signed in."""

    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    account_id: str | None = None
    stamp: str | None = None
    signed_in_at: float | None = None
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

    def sign_in(self, account_id: str, stamp: str, now: dt.datetime) -> None:
        """Start a signed-in session (a new CSRF token: nothing from before carries over)."""
        self.csrf = secrets.token_urlsafe(32)
        self.account_id, self.stamp, self.signed_in_at = account_id, stamp, now.timestamp()
        self.changed = True

    def sign_out(self) -> None:
        """Forget who was signed in."""
        self.csrf = secrets.token_urlsafe(32)
        self.account_id = self.stamp = self.signed_in_at = None
        self.changed = True

    def csrf_matches(self, presented: str | None) -> bool:
        """The form carries this session's token (compared in constant time)."""
        return bool(presented) and hmac.compare_digest(self.csrf, presented or "")


class SessionCookies:
    """Reads and writes sessions with the server's secret."""

    def __init__(self, secret: bytes) -> None:
        self._serializer = URLSafeSerializer(secret, salt="findata.dashboard.session")

    def read(self, request: Request, now: dt.datetime) -> Session:
        """The request's session; a new anonymous one when there is none, it is forged, or
        it is older than its lifetime."""
        raw = request.cookies.get(COOKIE)
        if raw:
            try:
                data = self._serializer.loads(raw)
                session = Session(
                    csrf=data["csrf"],
                    account_id=data.get("acct"),
                    stamp=data.get("stamp"),
                    signed_in_at=data.get("at"),
                    notice=data.get("notice"),
                )
            except (BadSignature, KeyError, TypeError):
                return Session(changed=True)
            if session.signed_in_at is not None and (
                now.timestamp() - session.signed_in_at > LIFETIME.total_seconds()
            ):
                session.sign_out()
            return session
        return Session(changed=True)

    def write(self, request: Request, response: Response, session: Session) -> None:
        """Set the cookie when the session changed."""
        if not session.changed:
            return
        value = self._serializer.dumps(
            {"csrf": session.csrf, "acct": session.account_id, "stamp": session.stamp,
             "at": session.signed_in_at, "notice": session.notice}
        )  # fmt: skip
        response.set_cookie(
            COOKIE,
            value,
            max_age=int(LIFETIME.total_seconds()),
            path=COOKIE_PATH,
            httponly=True,
            samesite="lax",
            secure=request.url.scheme == "https",
        )
