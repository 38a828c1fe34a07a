"""The dashboard's security over real HTTP: every state-changing form needs the session's CSRF
token, the session cookie's flags, sign-in throttling per account and per IP (the password
change form's check of the current password too), one account
cannot see or change another's keys or webhook endpoints, a disabled account can only read why,
and no key, secret or password reaches the logs or a later page."""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Iterator

import pytest

from tests.api.dashboard.people import PASSWORD, DashboardUser, dashboard_posts
from tests.api.server import RunningApi
from tests.webhooks.receiver import Receiver


@pytest.fixture
def user(dashboard: RunningApi) -> Iterator[DashboardUser]:
    person = DashboardUser(dashboard)
    yield person
    person.close()


def _max_user(dashboard: RunningApi) -> tuple[DashboardUser, str]:
    person = DashboardUser(dashboard)
    account_id = person.sign_up()
    dashboard.store.set_plan(account_id, "max")
    return person, account_id


def test_every_state_changing_form_needs_the_csrf_token(
    dashboard: RunningApi, receiver: Receiver
) -> None:
    person, account_id = _max_user(dashboard)
    key = dashboard.store.create_key(account_id)
    shown = dashboard.app.state.dashboard.webhooks.add(account_id, receiver.url("/csrf"))
    endpoint_id = shown.endpoint.endpoint_id
    ids = {"key_id": str(key.key_id), "endpoint_id": endpoint_id, "action": "remove",
           "delivery_id": "dlv_none"}  # fmt: skip
    posts = dashboard_posts()
    assert len(posts) >= 12, posts
    for path in posts:
        url = re.sub(r"{(\w+)}", lambda m: ids[m.group(1)], path)
        for data in ({}, {"csrf_token": "forged"}):
            answer = person.http.post(url, data={**data, "email": person.email, "url": "x"})
            assert answer.status_code == 403, (path, data, answer.status_code)
            assert "This form has expired" in answer.text
    # nothing changed: the key is active, the endpoint is there, still signed in
    assert dashboard.store.find_key(key.key).revoked_at is None  # type: ignore[union-attr]
    assert dashboard.app.state.dashboard.webhooks.get(endpoint_id).state == "active"
    assert person.http.get("/dashboard/keys").status_code == 200
    person.close()


def test_the_session_cookie_is_httponly_samesite_and_secure_over_https(
    dashboard: RunningApi,
) -> None:
    person = DashboardUser(dashboard)
    plain = person.http.get("/dashboard/sign-in").headers["set-cookie"].lower()
    assert "httponly" in plain and "samesite=lax" in plain and "path=/dashboard" in plain
    assert "secure" not in plain
    # behind a TLS-terminating proxy on loopback (uvicorn trusts its forwarded scheme)
    behind_proxy = DashboardUser(dashboard)
    over_https = behind_proxy.http.get("/dashboard/sign-in", headers={"X-Forwarded-Proto": "https"})
    assert "secure" in over_https.headers["set-cookie"].lower()
    behind_proxy.close()
    # the API never sets or reads it
    assert "set-cookie" not in person.http.get("/v1/status").headers
    person.close()


def test_sign_in_is_throttled_per_account_and_per_ip(dashboard: RunningApi) -> None:
    person = DashboardUser(dashboard)
    person.sign_up()
    person.http.cookies.clear()
    for _ in range(5):
        assert person.sign_in("wrong password!").status_code == 400
    throttled = person.sign_in()  # the right password, but too many failures
    assert throttled.status_code == 429 and "minute" in throttled.text
    dashboard.clock.advance(dt.timedelta(minutes=16))
    assert person.sign_in().status_code == 303
    # per IP: failures on many addresses from one IP
    strangers = [DashboardUser(dashboard, f"nobody{n}-{person.email}") for n in range(20)]
    for stranger in strangers:
        assert stranger.sign_in().status_code == 400
    other = DashboardUser(dashboard)
    other.sign_up()
    other.http.cookies.clear()
    assert other.sign_in().status_code == 429
    dashboard.clock.advance(dt.timedelta(minutes=16))  # later tests sign in from this IP too
    assert other.sign_in().status_code == 303
    for each in (person, other, *strangers):
        each.close()


def test_changing_the_password_is_throttled_like_signing_in(dashboard: RunningApi) -> None:
    person = DashboardUser(dashboard)
    person.sign_up()
    form = {"password": "a brand new password"}
    for n in range(5):  # a stolen session guessing the current password
        wrong = person.post(
            "/dashboard/account/password", {**form, "current": f"guess {n}"},
            form_page="/dashboard/account",
        )  # fmt: skip
        assert wrong.status_code == 400
    throttled = person.post(
        "/dashboard/account/password", {**form, "current": PASSWORD},
        form_page="/dashboard/account",
    )  # fmt: skip
    assert throttled.status_code == 429 and "minute" in throttled.text
    dashboard.clock.advance(dt.timedelta(minutes=16))  # later tests sign in from this IP too
    changed = person.post(
        "/dashboard/account/password", {**form, "current": PASSWORD},
        form_page="/dashboard/account",
    )  # fmt: skip
    assert changed.status_code == 303
    person.close()


def test_one_account_cannot_see_or_change_anothers_keys_or_endpoints(
    dashboard: RunningApi, receiver: Receiver
) -> None:
    owner, owner_id = _max_user(dashboard)
    intruder, _ = _max_user(dashboard)
    key = dashboard.store.create_key(owner_id)
    webhooks = dashboard.app.state.dashboard.webhooks
    endpoint_id = webhooks.add(owner_id, receiver.url("/owner")).endpoint.endpoint_id
    delivery = webhooks.send_test(endpoint_id, owner_id)
    answer = intruder.post(f"/dashboard/keys/{key.key_id}/revoke", form_page="/dashboard/keys")
    assert answer.status_code == 404
    assert dashboard.store.find_key(key.key).revoked_at is None  # type: ignore[union-attr]
    assert intruder.http.get(f"/dashboard/webhooks/{endpoint_id}").status_code == 404
    for action in ("pause", "resume", "test", "rotate", "remove"):
        answer = intruder.post(f"/dashboard/webhooks/{endpoint_id}/{action}",
                               form_page="/dashboard/webhooks")  # fmt: skip
        assert answer.status_code == 404, action
    resend = f"/dashboard/webhooks/{endpoint_id}/deliveries/{delivery.delivery_id}/resend"
    assert intruder.post(resend, form_page="/dashboard/webhooks").status_code == 404
    assert webhooks.get(endpoint_id).state == "active"
    assert len(webhooks.log(endpoint_id)) == 1
    # the intruder's own pages show nothing of the owner's
    for path in ("/dashboard/keys", "/dashboard/webhooks", "/dashboard/usage"):
        page = intruder.http.get(path).text
        assert key.prefix not in page and endpoint_id not in page and owner.email not in page
    owner.close()
    intruder.close()


def test_a_disabled_account_signs_in_and_sees_why_and_nothing_else(
    dashboard: RunningApi,
) -> None:
    person = DashboardUser(dashboard)
    account_id = person.sign_up()
    dashboard.store.set_state(account_id, "disabled")
    person.http.cookies.clear()
    assert person.sign_in().headers["location"] == "/dashboard/disabled"
    assert "Your account is disabled" in person.http.get("/dashboard/disabled").text
    for path in ("/dashboard/keys", "/dashboard/usage", "/dashboard/billing",
                 "/dashboard/webhooks", "/dashboard/account"):  # fmt: skip
        assert person.http.get(path).headers["location"] == "/dashboard/disabled", path
    answer = person.post("/dashboard/keys", form_page="/dashboard/disabled")
    assert answer.headers["location"] == "/dashboard/disabled"
    assert dashboard.store.list_keys(account_id) == []
    person.close()


def test_keys_secrets_and_passwords_stay_out_of_logs_and_later_pages(
    dashboard: RunningApi, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    person, _ = _max_user(dashboard)
    assert person.post("/dashboard/keys", form_page="/dashboard/keys").status_code == 303
    created = person.http.get("/dashboard/keys")  # the page the form leads to shows it once
    key = re.search(r'id="new-key" class="value">([^<]+)<', created.text)
    assert created.status_code == 200 and key, created.text[:500]
    added = person.post("/dashboard/webhooks", {"url": receiver.url("/quiet")},
                        form_page="/dashboard/webhooks")  # fmt: skip
    endpoint_page = person.http.get(added.headers["location"])
    secret = re.search(r"whsec_[A-Za-z0-9+/=]+", endpoint_page.text)
    assert added.status_code == 303 and secret, endpoint_page.text[:500]
    assert dashboard.client().get("/v1/status", headers={"X-API-Key": key.group(1)})
    later = "".join(
        person.http.get(path).text
        for path in ("/dashboard/keys", "/dashboard/webhooks", added.headers["location"])
    )
    for clear in (key.group(1), secret.group(0), PASSWORD):
        assert clear not in later
        assert clear not in caplog.text
    assert created.headers["cache-control"] == "no-store"
    person.close()


def test_the_dashboard_loads_nothing_from_another_host(dashboard: RunningApi) -> None:
    person, _ = _max_user(dashboard)
    for path in ("/dashboard/keys", "/dashboard/usage", "/dashboard/billing",
                 "/dashboard/webhooks", "/dashboard/account", "/dashboard/sign-in"):  # fmt: skip
        answer = person.http.get(path)
        assert answer.status_code == 200, path
        assert "default-src 'self'" in answer.headers["content-security-policy"]
        assert not re.search(r'(src|href)="(https?:)?//', answer.text), path
    person.close()
