"""Browser-facing errors are pages (issue 42, point 4), over real HTTP: an unknown dashboard
address answers a 404 page, a form's address opened with GET a 405 page with the ``Allow``
header of the methods it takes, a form without its CSRF token a 403 page; each in the
dashboard's style (its stylesheet, its security headers) with a way back. ``/favicon.ico`` is a
real icon. ``/v1/`` keeps the spec's JSON answers."""

from __future__ import annotations

import re

import httpx

from findata.api.dashboard.page import SECURITY_HEADERS
from tests.api.dashboard.people import DashboardUser
from tests.api.server import RunningApi

STYLESHEET = '<link rel="stylesheet" href="/dashboard/static/dashboard.css">'


def _page(answer: httpx.Response, status: int, title: str) -> str:
    """The answer is the dashboard's HTML page ``title`` with ``status``."""
    assert answer.status_code == status, (answer.status_code, answer.text[:300])
    assert answer.headers["content-type"].startswith("text/html")
    assert STYLESHEET in answer.text
    assert re.search(rf"<h1>{re.escape(title)}</h1>", answer.text), answer.text[:800]
    assert f"Error {status}" in answer.text
    for name, value in SECURITY_HEADERS.items():
        assert answer.headers[name] == value, name
    return answer.text


def test_an_unknown_dashboard_address_is_a_404_page(dashboard: RunningApi) -> None:
    anonymous = DashboardUser(dashboard)
    for path in ("/dashboard/xyz", "/dashboard/keys/xyz/abc", "/dashboard/static/none.css"):
        page = _page(anonymous.http.get(path), 404, "Page not found")
        assert 'href="/dashboard/sign-in"' in page  # the way back
    member = DashboardUser(dashboard)
    member.sign_up()
    page = _page(member.http.get("/dashboard/xyz"), 404, "Page not found")
    assert 'href="/dashboard/keys"' in page and "Sign out" in page  # signed in: the nav too
    for person in (anonymous, member):
        person.close()


def test_a_form_address_opened_with_get_is_a_405_page_with_allow(dashboard: RunningApi) -> None:
    person = DashboardUser(dashboard)
    person.sign_up()
    for path in ("/dashboard/sign-out", "/dashboard/billing/plan", "/dashboard/verify/resend"):
        answer = person.http.get(path)
        page = _page(answer, 405, "Not a page to open")
        assert answer.headers["allow"] == "POST"
        assert "accepts GET" not in page and 'href="/dashboard/keys"' in page
    # an address that has a page and a form: both are allowed
    answer = person.http.request("DELETE", "/dashboard/keys")
    _page(answer, 405, "Not a page to open")
    assert answer.headers["allow"] == "GET, POST"
    person.close()


def test_a_form_without_its_csrf_token_is_a_403_page(dashboard: RunningApi) -> None:
    person = DashboardUser(dashboard)
    person.sign_up()
    answer = person.http.post("/dashboard/keys", data={"csrf_token": "forged"})
    page = _page(answer, 403, "This form has expired")
    assert "reload the page" in page and 'href="/dashboard/keys"' in page
    assert (
        dashboard.store.list_keys(person.running.store.find_account_by_email(person.email).id) == []
    )  # type: ignore[union-attr]
    person.close()


def test_the_site_icon_is_a_real_icon(dashboard: RunningApi) -> None:
    with dashboard.client() as client:
        icon = client.get("/favicon.ico")
    assert icon.status_code == 200
    assert icon.headers["content-type"] == "image/x-icon"
    assert icon.content[:4] == b"\x00\x00\x01\x00"  # an ICO file's header
    assert b"\x89PNG" in icon.content


def test_the_api_keeps_its_json_errors(dashboard: RunningApi) -> None:
    key = dashboard.new_key("pro").key
    with dashboard.client() as client:
        unknown = client.get("/v1/xyz", headers={"X-API-Key": key})
        wrong_method = client.post("/v1/status")
    assert unknown.status_code == 404 and unknown.json()["code"] == "not_found"
    assert wrong_method.status_code == 405 and wrong_method.headers["allow"] == "GET"
    assert wrong_method.json()["code"] == "method_not_allowed"
