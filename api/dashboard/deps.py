"""The dashboard's dependencies as ``Annotated`` aliases: ``Visitor`` (anyone, signed in or
not) and ``Member`` (signed in, account enabled; others are sent to sign in, or to the page that
says why their account is disabled)."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import Depends, Request

from findata.api.dashboard.page import Page, Redirect
from findata.api.dashboard.services import DashboardServices

SIGN_IN = "/dashboard/sign-in"
DISABLED = "/dashboard/disabled"


def visitor(request: Request) -> Page:
    """The page of anyone: the session read, the person loaded when its record is live (a
    cookie whose session was ended, by sign-out, a password change or disabling the account,
    or has expired, is anonymous)."""
    services: DashboardServices = request.app.state.dashboard
    session = services.cookies.read(request)
    person = None
    if session.token is not None:
        account_id = services.sessions.account_of(session.token)
        if account_id is None:
            session.sign_out()
        else:
            person = services.logins.person(account_id)
    return Page(request, services, session, person)


def member(page: Annotated[Page, Depends(visitor)]) -> Page:
    """The page of a signed-in person whose account is enabled."""
    if page.person is None:
        target = page.request.url.path
        raise Redirect(f"{SIGN_IN}?next={quote(target)}")
    if not page.person.account.enabled:
        raise Redirect(DISABLED)
    return page


Visitor = Annotated[Page, Depends(visitor)]
Member = Annotated[Page, Depends(member)]
