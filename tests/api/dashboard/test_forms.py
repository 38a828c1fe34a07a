"""Post/redirect/get on every dashboard form (issue 42, point 3), over real HTTP: each form sent
successfully answers 303 to a page, so a reload sends nothing again; a new key and a webhook
secret are shown once on the page the form leads to; destructive actions (regenerate, revoke,
remove an endpoint, cancel a trial) ask first on a page of their own (no JavaScript needed),
and nothing happens until that page's form is sent."""

from __future__ import annotations

import datetime as dt
import re

from findata.accounts.invitations import create_invitations
from findata.accounts.logins import Logins
from tests.api.dashboard.people import PASSWORD, DashboardUser, dashboard_posts
from tests.api.dashboard.server import delivery_worker
from tests.api.server import RunningApi
from tests.webhooks.receiver import Receiver

NEW_KEY = re.compile(r'id="new-key" class="value">([^<]+)<')
NEW_SECRET = re.compile(r'id="new-secret" class="value">(whsec_[^<]+)<')


def test_every_form_sent_successfully_answers_303_to_a_page(
    dashboard: RunningApi, receiver: Receiver
) -> None:
    answers: dict[str, int] = {}
    services = dashboard.app.state.dashboard
    logins: Logins = services.logins

    def send(person: DashboardUser, route: str, data: dict[str, str] | None = None, **ids: str):
        path = route.format(**ids)
        answer = person.post(path, data, form_page="/dashboard/sign-in")
        answers[route] = answer.status_code
        if answer.status_code == 303:
            assert person.http.get(answer.headers["location"]).status_code == 200, path
        return answer

    # people: sign up, out, in, resend, reset, change the password
    person = DashboardUser(dashboard)
    send(person, "/dashboard/sign-up", {"email": person.email, "password": PASSWORD})
    account_id = person.running.store.find_account_by_email(person.email).id  # type: ignore[union-attr]
    send(person, "/dashboard/verify/resend")
    logins.verify_email(logins.verification_token(account_id))
    send(person, "/dashboard/sign-out")
    send(person, "/dashboard/sign-in", {"email": person.email, "password": PASSWORD})
    send(person, "/dashboard/reset", {"email": person.email})
    found = logins.reset_token(person.email)
    assert found is not None
    send(person, "/dashboard/reset/confirm", {"token": found[1], "password": "a second password"})
    send(
        person, "/dashboard/account/password",
        {"current": "a second password", "password": PASSWORD},
    )  # fmt: skip

    # keys on Free: create, then regenerate (confirmed)
    send(person, "/dashboard/keys", {"label": "first"})
    send(person, "/dashboard/keys/regenerate", {"label": "second"})
    # billing: an invitation's trial, cancelled; a plan and an interval
    code = create_invitations(
        services.engine, services.clock, "pro", dashboard.clock.now().date() + dt.timedelta(days=3)
    )[0]
    send(person, "/dashboard/billing/invitation", {"code": code, "interval": "monthly"})
    send(person, "/dashboard/billing/trial/cancel")
    send(person, "/dashboard/billing/plan", {"plan": "max", "interval": "monthly"})
    send(person, "/dashboard/billing/interval", {"interval": "yearly"})

    # keys on Max: revoke one; webhooks: add, each action, resend a failed delivery
    key_id = str(dashboard.store.list_keys(account_id)[0]["id"])
    send(person, "/dashboard/keys/{key_id}/revoke", key_id=key_id)
    path = "/forms-303"
    added = send(person, "/dashboard/webhooks", {"url": receiver.url(path)})
    endpoint_id = added.headers["location"].rsplit("/", 1)[1]
    receiver.answer(path, 500)
    failed = services.webhooks.send_test(endpoint_id, account_id)
    delivery_worker(dashboard).run_once()  # (other tests' deliveries may go out too)
    assert services.webhooks.log(endpoint_id, account_id)[0].status == "Failed"
    send(
        person, "/dashboard/webhooks/{endpoint_id}/deliveries/{delivery_id}/resend",
        endpoint_id=endpoint_id, delivery_id=failed.delivery_id,
    )  # fmt: skip
    for action in ("pause", "resume", "test", "rotate", "remove"):
        send(person, "/dashboard/webhooks/{endpoint_id}/{action}", endpoint_id=endpoint_id,
             action=action)  # fmt: skip

    assert set(answers) == set(dashboard_posts())  # every form of the dashboard was sent
    assert answers == dict.fromkeys(answers, 303), answers
    person.close()


def test_a_new_key_is_shown_once_and_a_reload_creates_nothing(dashboard: RunningApi) -> None:
    person = DashboardUser(dashboard)
    account_id = person.sign_up()
    dashboard.store.set_plan(account_id, "max")
    too_long = person.post("/dashboard/keys", {"label": "x" * 65}, form_page="/dashboard/keys")
    assert too_long.status_code == 400 and "at most 64 characters" in too_long.text
    assert dashboard.store.list_keys(account_id) == []  # refused: nothing created
    created = person.post("/dashboard/keys", {"label": "ci"}, form_page="/dashboard/keys")
    assert (created.status_code, created.headers["location"]) == (303, "/dashboard/keys")
    assert "fdk_" not in created.text  # the key is not in the answer to the POST
    shown = person.http.get("/dashboard/keys")
    key = NEW_KEY.search(shown.text)
    assert key, shown.text[:500]
    [stored] = dashboard.store.list_keys(account_id)
    assert key.group(1).startswith(str(stored["prefix"])) and stored["label"] == "ci"
    reload = person.http.get("/dashboard/keys")  # a reload is a GET: nothing is created
    assert key.group(1) not in reload.text and not NEW_KEY.search(reload.text)
    assert len(dashboard.store.list_keys(account_id)) == 1
    person.close()


def test_a_webhook_secret_is_shown_once_on_the_endpoints_page(
    dashboard: RunningApi, receiver: Receiver
) -> None:
    person = DashboardUser(dashboard)
    account_id = person.sign_up()
    dashboard.store.set_plan(account_id, "max")
    added = person.post(
        "/dashboard/webhooks", {"url": receiver.url()}, form_page="/dashboard/webhooks"
    )
    assert added.status_code == 303 and "whsec_" not in added.text
    page = added.headers["location"]
    secret = NEW_SECRET.search(person.http.get(page).text)
    assert secret
    again = person.http.get(page).text
    assert secret.group(1) not in again and not NEW_SECRET.search(again)
    assert len(dashboard.app.state.dashboard.webhooks.list(account_id)) == 1
    rotated = person.post(f"{page}/rotate", form_page=page)
    assert rotated.status_code == 303 and rotated.headers["location"] == page
    new = NEW_SECRET.search(person.http.get(page).text)
    assert new and new.group(1) != secret.group(1)
    assert not NEW_SECRET.search(person.http.get(page).text)
    person.close()


def _confirmation(person: DashboardUser, path: str) -> str:
    """The confirmation page at ``path``: its form posts to ``path`` with the CSRF token."""
    page = person.http.get(path)
    assert page.status_code == 200, (path, page.status_code)
    assert re.search(rf'<form method="post" action="{re.escape(path.split("?")[0])}"', page.text)
    assert 'name="csrf_token"' in page.text and 'href="/dashboard/' in page.text  # Cancel
    return page.text


def test_destructive_actions_ask_first_and_do_nothing_until_confirmed(
    dashboard: RunningApi, receiver: Receiver
) -> None:
    services = dashboard.app.state.dashboard
    person = DashboardUser(dashboard)
    account_id = person.sign_up()
    # Free: a second "Create key" would revoke the first: it leads to the confirmation
    person.post("/dashboard/keys", form_page="/dashboard/keys")
    [first] = dashboard.store.list_keys(account_id)
    again = person.post("/dashboard/keys", {"label": "new"}, form_page="/dashboard/keys")
    assert again.headers["location"] == "/dashboard/keys/regenerate?label=new"
    assert "stops working at once" in _confirmation(person, again.headers["location"])
    assert [key["id"] for key in dashboard.store.list_keys(account_id)] == [first["id"]]
    assert dashboard.store.list_keys(account_id)[0]["revoked_at"] is None

    # Max: revoke one key; remove an endpoint
    dashboard.store.set_plan(account_id, "max")
    _confirmation(person, f"/dashboard/keys/{first['id']}/revoke")
    endpoint_id = services.webhooks.add(account_id, receiver.url()).endpoint.endpoint_id
    _confirmation(person, f"/dashboard/webhooks/{endpoint_id}/remove")
    assert dashboard.store.list_keys(account_id)[0]["revoked_at"] is None
    assert services.webhooks.get(endpoint_id, account_id).state == "active"
    # a trial: cancel
    dashboard.store.set_plan(account_id, "free")
    code = create_invitations(
        services.engine, services.clock, "pro", dashboard.clock.now().date() + dt.timedelta(days=1)
    )[0]
    person.post("/dashboard/billing/invitation", {"code": code, "interval": "yearly"},
                form_page="/dashboard/billing")  # fmt: skip
    assert "Cancel the trial" in _confirmation(person, "/dashboard/billing/trial/cancel")
    assert services.billing.summary(account_id).trial.cancelled_at is None

    # the pages lead to these steps: no form on them posts a destructive action directly
    dashboard.store.set_plan(account_id, "max")
    services.webhooks.add(account_id, receiver.url())
    pages = "".join(
        person.http.get(path).text
        for path in ("/dashboard/keys", "/dashboard/billing", f"/dashboard/webhooks/{endpoint_id}")
    )
    direct = re.findall(r'<form method="post" action="([^"]+)"', pages)
    assert not [action for action in direct if re.search(r"/(revoke|remove|cancel|regenerate)$",
                                                          action)], direct  # fmt: skip
    person.close()
