"""Dashboard sessions end on the server (issue 42, point 1), over real HTTP: a copy of the
session cookie saved before "Sign out", a password change or disabling the account is refused
after it, for pages and forms alike, and nothing is changed with it."""

from __future__ import annotations

import httpx

from findata.api.dashboard.sessions import COOKIE
from tests.api.dashboard.people import CSRF, DashboardUser
from tests.api.server import RunningApi


def _copy_of(person: DashboardUser) -> tuple[httpx.Client, str]:
    """Another client holding a copy of the person's session cookie, and a form's CSRF token
    as the page showed it then (what someone who copied the cookie would hold)."""
    page = person.http.get("/dashboard/keys")
    assert page.status_code == 200
    match = CSRF.search(page.text)
    assert match
    copy = httpx.Client(
        base_url=person.running.url,
        cookies={COOKIE: person.http.cookies[COOKIE]},
        timeout=30,
        follow_redirects=False,
    )
    assert copy.get("/dashboard/keys").status_code == 200  # the copy works, for now
    return copy, match.group(1)


def _refused(copy: httpx.Client, csrf: str) -> None:
    """The copy is signed out: a page sends it to sign in, a form changes nothing."""
    page = copy.get("/dashboard/keys")
    assert page.status_code == 303
    assert page.headers["location"] == "/dashboard/sign-in?next=/dashboard/keys"
    posted = copy.post("/dashboard/keys", data={"csrf_token": csrf, "label": "stolen"})
    assert posted.status_code == 303
    assert posted.headers["location"].startswith("/dashboard/sign-in")
    password = copy.post(
        "/dashboard/account/password",
        data={"csrf_token": csrf, "current": "x" * 12, "password": "y" * 12},
    )
    assert password.headers["location"].startswith("/dashboard/sign-in")


def test_a_cookie_saved_before_sign_out_is_refused_after_it(dashboard: RunningApi) -> None:
    person = DashboardUser(dashboard)
    account_id = person.sign_up()
    copy, csrf = _copy_of(person)
    assert person.post("/dashboard/sign-out", form_page="/dashboard/keys").status_code == 303
    _refused(copy, csrf)
    assert dashboard.store.list_keys(account_id) == []
    copy.close()
    person.close()


def test_a_password_change_ends_every_other_session_at_once(dashboard: RunningApi) -> None:
    """The clock does not move between sign-in and the change: ending sessions must not hang
    on a timestamp changing."""
    person = DashboardUser(dashboard)
    account_id = person.sign_up()
    elsewhere = DashboardUser(dashboard, person.email)
    assert elsewhere.sign_in().status_code == 303
    copy, csrf = _copy_of(person)
    changed = person.post(
        "/dashboard/account/password",
        {"current": "correct horse battery", "password": "a brand new password"},
        form_page="/dashboard/account",
    )
    assert changed.status_code == 303
    assert person.http.get("/dashboard/keys").status_code == 200  # this browser goes on
    _refused(copy, csrf)  # the copy of its cookie from before does not
    assert elsewhere.http.get("/dashboard/keys").status_code == 303  # nor another browser
    assert dashboard.store.list_keys(account_id) == []
    for each in (copy, person, elsewhere):
        each.close()


def test_disabling_an_account_ends_its_sessions(dashboard: RunningApi) -> None:
    person = DashboardUser(dashboard)
    account_id = person.sign_up()
    copy, csrf = _copy_of(person)
    dashboard.store.set_state(account_id, "disabled")
    dashboard.store.set_state(account_id, "enabled")  # enabling again brings no session back
    _refused(copy, csrf)
    assert person.http.get("/dashboard/keys").status_code == 303
    assert person.sign_in().status_code == 303  # signing in again works
    assert person.http.get("/dashboard/keys").status_code == 200
    copy.close()
    person.close()
