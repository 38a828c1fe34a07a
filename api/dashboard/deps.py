"""The dashboard's dependencies as ``Annotated`` aliases: ``Visitor`` (anyone, signed in or
not) and ``Member`` (signed in, account enabled; others are sent to sign in, or to the page that
says why their account is disabled)."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import Depends, Request

from findata.accounts.store import AccountNotFound
from findata.api.dashboard.page import Page, Redirect
from findata.api.dashboard.services import DashboardServices

SIGN_IN = "/dashboard/sign-in"
DISABLED = "/dashboard/disabled"


def visitor(request: Request) -> Page:
    """The page of anyone: the session read, the person loaded when signed in (a session of
    an older password, or of an account that is gone, is signed out)."""
    services: DashboardServices = request.app.state.dashboard
    session = services.cookies.read(request, services.clock.now())
    person = None
    if session.account_id is not None:
        try:
            person = services.logins.person(session.account_id)
        except AccountNotFound:
            person = None
        if person is None or person.session_stamp != session.stamp:
            session.sign_out()
            person = None
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
