"""The dashboard in a real browser (Debian's chromium driven by Playwright) against a real
server: sign up, confirm the address by the e-mail's link, create a key, call the API with it,
see the call on the usage page, regenerate and see the old key refused with its revocation date;
a Max account's webhook endpoint: add, test, Delivered, rotate, resend; invitation trials billed
or, cancelled, back to Free when the clock passes 30 days; each refusal shown on the page.
Issue 42: a cookie saved before sign-out is refused after it; a reload after a form creates
nothing and destructive actions ask first; browser-facing errors are pages; the keys page's
quickstart holds the new key once, the billing page compares the plans, the nav marks the page.
Every page is saved as a screenshot at desktop and phone width (test-artifacts/, not kept in
git)."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from findata.accounts.invitations import create_invitations
from findata.accounts.jobs import AccountJobs
from findata.contracts.plans import load_plans
from tests.api.dashboard.people import PASSWORD
from tests.api.dashboard.server import SCREENSHOTS, delivery_worker, link_in, mail_to
from tests.api.server import RunningApi
from tests.webhooks.receiver import Receiver

DESKTOP = {"width": 1280, "height": 860}
PHONE = {"width": 390, "height": 844}


class Visit:
    """One person's browser tab on the dashboard."""

    def __init__(self, browser: Any, running: RunningApi) -> None:
        self.running = running
        self.context = browser.new_context(base_url=running.url, viewport=DESKTOP)
        self.page = self.context.new_page()
        self.email = f"{uuid.uuid4().hex[:12]}@example.com"

    def go(self, path: str) -> Any:
        self.page.goto(path)
        return self.page

    def text(self) -> str:
        return self.page.inner_text("main")

    def shoot(self, name: str) -> None:
        """The page as it is now, at desktop and phone width."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        for label, size in (("desktop", DESKTOP), ("phone", PHONE)):
            self.page.set_viewport_size(size)
            self.page.screenshot(path=str(SCREENSHOTS / f"{name}-{label}.png"), full_page=True)
        self.page.set_viewport_size(DESKTOP)

    def sign_up(self) -> None:
        """Sign up through the form and confirm the address by the e-mail's link."""
        self.go("/")
        assert self.page.url.endswith("/dashboard/sign-in")
        self.page.click("text=Create an account")
        self.page.fill("input[name=email]", self.email)
        self.page.fill("input[name=password]", PASSWORD)
        self.page.click("button:has-text('Sign up')")
        assert "Confirm your e-mail address" in self.page.inner_text("body")
        link = link_in(mail_to(self.running, self.email, "Confirm your e-mail"))
        assert link.startswith(self.running.url + "/dashboard/verify?token=")
        self.page.goto(link)
        assert "E-mail confirmed" in self.text()

    def sign_in(self) -> None:
        """Sign in through the form (a session lasts 14 days)."""
        self.go("/dashboard/sign-in")
        self.page.fill("input[name=email]", self.email)
        self.page.fill("input[name=password]", PASSWORD)
        self.page.click("button:has-text('Sign in')")
        assert "/dashboard/keys" in self.page.url, self.text()

    def new_key(self, button: str, label: str = "") -> str:
        """Press the keys page's Create or Regenerate button (confirming a regeneration); the
        key it shows once."""
        self.go("/dashboard/keys")
        if label:
            self.page.fill("#key-form input[name=label]", label)
        self.page.click(f"button:has-text('{button}')")
        if "/dashboard/keys/regenerate" in self.page.url:
            assert "Regenerate your key?" in self.text()
            self.page.click("form.confirm button")
        return self.page.inner_text("#new-key").strip()

    def confirm(self, title: str) -> None:
        """On a confirmation page ``title``, send its form."""
        assert title in self.page.inner_text("h1"), self.text()
        self.page.click("form.confirm button")

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def visit(browser: Any, dashboard: RunningApi) -> Iterator[Visit]:
    opened = Visit(browser, dashboard)
    yield opened
    opened.close()


def _prices(running: RunningApi, key: str, ticker: str) -> httpx.Response:
    with running.client() as client:
        return client.get(f"/v1/prices/{ticker}", params={"limit": 5}, headers={"X-API-Key": key})


def test_sign_up_key_call_usage_regenerate(
    visit: Visit, dashboard: RunningApi, scenarios: dict[str, Any]
) -> None:
    visit.go("/dashboard/sign-up")
    visit.shoot("sign-up")
    visit.sign_up()
    first = visit.new_key("Create key")
    assert re.fullmatch(r"[a-z0-9]{3}_[0-9a-f]{32}", first), first
    assert visit.page.is_visible("button.copy")
    visit.shoot("keys-new-key")
    ticker = scenarios["plain"]["ticker"]
    assert _prices(dashboard, first, ticker).status_code == 200

    visit.go("/dashboard/usage")
    today_bar = visit.page.locator("svg text.value").last.text_content()
    assert today_bar == "1"  # the chart counts one per API call
    table = visit.page.inner_text("#endpoint-table")
    assert re.search(r"prices\s+1\s+0\s+5", table), table
    assert "Requests today" in visit.text() and "of 100" in visit.text()
    visit.shoot("usage")

    visit.go("/dashboard/keys")
    assert first not in visit.page.content()  # shown once only
    second = visit.new_key("Regenerate key")
    assert second != first and "The previous key is revoked." in visit.text()
    refused = _prices(dashboard, first, ticker)
    today = dashboard.clock.now().date().isoformat()
    assert refused.status_code == 401 and today in refused.json()["detail"], refused.text
    assert _prices(dashboard, second, ticker).status_code == 200
    visit.go("/dashboard/keys")
    assert f"Revoked {today}" in visit.text()
    visit.shoot("keys")
    for path, name in (("/dashboard/account", "account"), ("/dashboard/billing", "billing")):
        visit.go(path)
        visit.shoot(name)


def test_free_sees_what_webhooks_would_give_and_cannot_add_one(visit: Visit) -> None:
    visit.sign_up()
    visit.go("/dashboard/webhooks")
    assert "Webhooks need the Max plan or higher" in visit.text()
    assert visit.page.locator("input[name=url]").count() == 0
    visit.shoot("webhooks-free")


def test_a_max_account_adds_tests_rotates_and_resends_a_webhook(
    visit: Visit, dashboard: RunningApi, receiver: Receiver
) -> None:
    visit.sign_up()
    visit.go("/dashboard/billing")
    plan_card = visit.page.locator(".plan", has_text="Max").first
    plan_card.locator("select[name=interval]").select_option("monthly")
    plan_card.locator("button:has-text('Switch to Max')").click()
    assert "You are on Max now." in visit.text()
    assert "99.00 USD" in visit.page.inner_text("#invoices")

    path = f"/hooks/{uuid.uuid4().hex}"
    visit.go("/dashboard/webhooks")
    visit.page.fill("input[name=url]", receiver.url(path))
    visit.page.click("button:has-text('Add endpoint')")
    secret = visit.page.inner_text("#new-secret").strip()
    assert secret.startswith("whsec_")
    visit.shoot("webhook-added")

    visit.page.click("button:has-text('Send test')")
    assert "webhook.test" in visit.page.inner_text("#delivery-log")
    assert delivery_worker(dashboard).run_once().outcomes == {"delivered": 1}
    visit.page.reload()
    assert "Delivered" in visit.page.inner_text("#delivery-log")

    visit.page.click("button:has-text('Rotate secret')")
    rotated = visit.page.inner_text("#new-secret").strip()
    assert rotated.startswith("whsec_") and rotated != secret
    assert "keeps signing beside it for 24 hours" in visit.text()

    receiver.answer(path, 500)  # the next test fails once: then Resend
    visit.page.click("button:has-text('Send test')")
    assert delivery_worker(dashboard).run_once().outcomes == {"failed": 1}
    visit.page.reload()
    visit.page.click("button:has-text('Resend')")
    assert "The event is sent again" in visit.text()
    worker = delivery_worker(dashboard)
    assert worker.run_once().outcomes.get("delivered") == 1
    visit.page.reload()
    log = visit.page.inner_text("#delivery-log")
    assert "(resend)" in log and "Delivered" in log
    visit.shoot("webhook-log")
    visit.go("/dashboard/webhooks")
    visit.shoot("webhooks")


def test_the_key_limit_is_shown_on_the_page(visit: Visit, dashboard: RunningApi) -> None:
    visit.sign_up()
    account = dashboard.store.find_account_by_email(visit.email)
    assert account is not None
    dashboard.store.set_plan(account.id, "max")
    for _ in range(5):
        visit.new_key("Create key")
    visit.go("/dashboard/keys")
    visit.page.click("button:has-text('Create key')")
    assert "Key limit reached: the Max plan allows 5 active keys." in visit.text()
    visit.page.locator("button:has-text('Revoke')").first.click()
    visit.confirm("Revoke this key?")
    assert "The key is revoked" in visit.text()
    assert len(visit.new_key("Create key")) == 36


def _redeem(visit: Visit, code: str, interval: str) -> None:
    visit.go("/dashboard/billing")
    visit.page.fill("#redeem input[name=code]", code)
    visit.page.locator("#redeem select[name=interval]").select_option(interval)
    visit.page.click("#redeem button:has-text('Redeem')")


def _run_trial_job(dashboard: RunningApi) -> dict[str, int]:
    """One pass of the account jobs `findata serve` runs (trials, renewals, then e-mail)."""
    services = dashboard.app.state.dashboard
    jobs = AccountJobs(services.engine, services.clock, services.accounts, services.mailer)
    return jobs.run_once()


def test_an_invitation_trial_is_billed_or_cancelled_back_to_free(
    browser: Any, dashboard: RunningApi
) -> None:
    services = dashboard.app.state.dashboard
    today = dashboard.clock.now().date()
    billed_code, cancelled_code = create_invitations(
        services.engine, services.clock, "max", today + dt.timedelta(days=10), 2
    )
    billed, cancelled = Visit(browser, dashboard), Visit(browser, dashboard)
    for visit, code in ((billed, billed_code), (cancelled, cancelled_code)):
        visit.sign_up()
        _redeem(visit, code, "yearly")
        assert "Invitation redeemed" in visit.text()
        assert visit.page.inner_text("#plan-name") == "Max"
        assert "No invoices." in visit.page.inner_text("#invoices")  # nothing charged
    billed.shoot("billing-trial")
    # a used code is refused on the page
    used = Visit(browser, dashboard)
    used.sign_up()
    _redeem(used, billed_code, "monthly")
    assert "used" in used.text().lower()
    cancelled.page.click("button:has-text('Cancel the trial')")
    cancelled.confirm("Cancel the trial?")
    assert "you return to Free when it ends" in cancelled.text()

    dashboard.clock.advance(dt.timedelta(days=31))
    first = _run_trial_job(dashboard)
    assert (first["billing_started"], first["returned_to_free"]) == (1, 1), first
    again = _run_trial_job(dashboard)  # idempotent
    assert (again["billing_started"], again["returned_to_free"]) == (0, 0), again
    billed.go("/dashboard/billing")
    assert "/dashboard/sign-in" in billed.page.url  # sessions last 14 days
    for visit in (billed, cancelled, used):
        visit.sign_in()
    billed.go("/dashboard/billing")
    assert billed.page.inner_text("#plan-name") == "Max"
    invoices = billed.page.inner_text("#invoices")
    assert "990.00 USD" in invoices and invoices.count("inv_") == 1
    billed.shoot("billing-after-trial")
    cancelled.go("/dashboard/billing")
    assert cancelled.page.inner_text("#plan-name") == "Free"
    assert "No invoices." in cancelled.page.inner_text("#invoices")
    assert "billing has started" in mail_to(dashboard, billed.email, "trial has ended").lower()
    assert "on free" in mail_to(dashboard, cancelled.email, "trial has ended").lower()
    # an expired code: its redeem-by date has passed (the clock moved 31 days)
    expired = create_invitations(
        services.engine, services.clock, "pro", dashboard.clock.now().date(), 1
    )[0]
    dashboard.clock.advance(dt.timedelta(days=1))
    _redeem(used, expired, "monthly")
    assert "expired" in used.text().lower()
    used.shoot("billing-refused")
    for visit in (billed, cancelled, used):
        visit.close()


def test_a_password_reset_by_e_mail_and_the_disabled_page(
    visit: Visit, dashboard: RunningApi
) -> None:
    visit.sign_up()
    visit.context.clear_cookies()
    visit.go("/dashboard/sign-in")
    visit.shoot("sign-in")
    visit.page.click("text=Forgot your password")
    visit.page.fill("input[name=email]", visit.email)
    visit.shoot("reset")
    visit.page.click("button:has-text('Send the link')")
    assert "Check your e-mail" in visit.text()
    link = link_in(mail_to(dashboard, visit.email, "Reset your findata password"))
    visit.page.goto(link)
    visit.shoot("reset-confirm")
    visit.page.fill("input[name=password]", "a brand new passphrase")
    visit.page.click("button:has-text('Set the password')")
    assert "Your password is set." in visit.text()
    visit.page.goto(link)  # the link works once
    visit.page.fill("input[name=password]", "yet another passphrase")
    visit.page.click("button:has-text('Set the password')")
    assert "link" in visit.page.inner_text(".error").lower()

    account = dashboard.store.find_account_by_email(visit.email)
    assert account is not None
    dashboard.store.set_state(account.id, "disabled")  # which ends its sessions
    visit.go("/dashboard/keys")
    assert "/dashboard/sign-in" in visit.page.url
    visit.page.fill("input[name=email]", visit.email)
    visit.page.fill("input[name=password]", "a brand new passphrase")
    visit.page.click("button:has-text('Sign in')")
    assert "Your account is disabled" in visit.text()
    visit.shoot("disabled")


# issue 42: sessions end on the server, post/redirect/get, error pages, the first run


def test_a_cookie_saved_before_sign_out_is_refused_after_it(
    visit: Visit, browser: Any, dashboard: RunningApi
) -> None:
    visit.sign_up()
    visit.go("/dashboard/keys")
    saved = visit.context.cookies()
    csrf = visit.page.locator("input[name=csrf_token]").first.get_attribute("value")
    visit.page.click("button:has-text('Sign out')")
    assert visit.page.url.endswith("/dashboard/sign-in")

    thief = browser.new_context(base_url=dashboard.url, viewport=DESKTOP)
    thief.add_cookies(saved)
    page = thief.new_page()
    page.goto("/dashboard/keys")
    assert page.url.endswith("/dashboard/sign-in?next=/dashboard/keys")
    posted = thief.request.post("/dashboard/keys", form={"csrf_token": csrf}, max_redirects=0)
    assert posted.status == 303 and posted.headers["location"].startswith("/dashboard/sign-in")
    account = dashboard.store.find_account_by_email(visit.email)
    assert account is not None and dashboard.store.list_keys(account.id) == []
    thief.close()


def test_a_reload_after_a_form_creates_nothing(
    visit: Visit, dashboard: RunningApi, receiver: Receiver
) -> None:
    visit.sign_up()
    account = dashboard.store.find_account_by_email(visit.email)
    assert account is not None
    dashboard.store.set_plan(account.id, "max")
    key = visit.new_key("Create key")
    visit.page.reload()
    assert visit.page.url.endswith("/dashboard/keys")
    assert visit.page.locator("#new-key").count() == 0 and key not in visit.page.content()
    assert len(dashboard.store.list_keys(account.id)) == 1

    visit.go("/dashboard/webhooks")
    visit.page.fill("input[name=url]", receiver.url())
    visit.page.click("button:has-text('Add endpoint')")
    secret = visit.page.inner_text("#new-secret").strip()
    visit.page.reload()
    assert visit.page.locator("#new-secret").count() == 0 and secret not in visit.page.content()
    assert len(dashboard.app.state.dashboard.webhooks.list(account.id)) == 1

    # revoking asks first; Cancel changes nothing
    visit.go("/dashboard/keys")
    visit.page.click("#keys button:has-text('Revoke')")
    visit.shoot("confirm-revoke")
    visit.page.click("form.confirm a:has-text('Cancel')")
    assert visit.page.url.endswith("/dashboard/keys")
    assert dashboard.store.list_keys(account.id)[0]["revoked_at"] is None
    visit.page.click("#keys button:has-text('Revoke')")
    visit.confirm("Revoke this key?")
    assert "The key is revoked" in visit.text()
    visit.page.reload()  # the notice was shown once; nothing is revoked twice or posted again
    assert "The key is revoked" not in visit.text()


def _error_page(visit: Visit, title: str, shot: str, back: str | None = None) -> None:
    """The page shown is the error page ``title`` (saved as ``shot``); its button leads
    ``back``."""
    assert visit.page.inner_text("h1") == title
    visit.shoot(shot)
    if back is not None:
        visit.page.click("main a.button")
        assert visit.page.url.endswith(back)


def test_browser_facing_errors_are_pages(visit: Visit, dashboard: RunningApi) -> None:
    visit.sign_up()
    answer = visit.page.goto("/dashboard/xyz")
    assert answer is not None and answer.status == 404
    assert visit.page.locator("nav a").count() == 5  # styled, with the dashboard's nav
    _error_page(visit, "Page not found", "error-404", back="/dashboard/keys")

    answer = visit.page.goto("/dashboard/sign-out")
    assert answer is not None and answer.status == 405
    assert answer.headers["allow"] == "POST"
    _error_page(visit, "Not a page to open", "error-405")

    visit.context.clear_cookies()
    visit.go("/dashboard/sign-in")
    visit.context.clear_cookies()  # the session the form belongs to is gone
    visit.page.fill("input[name=email]", visit.email)
    visit.page.fill("input[name=password]", PASSWORD)
    visit.page.click("button:has-text('Sign in')")
    _error_page(visit, "This form has expired", "error-403", back="/dashboard/sign-in")

    icon = visit.page.goto("/favicon.ico")
    assert icon is not None and icon.status == 200
    assert icon.headers["content-type"] == "image/x-icon"
    api = visit.page.goto("/v1/xyz")
    assert api is not None and api.status == 401 and api.json()["code"] == "unauthorized"


def test_the_first_run_teaches(visit: Visit, dashboard: RunningApi) -> None:
    visit.sign_up()
    visit.go("/dashboard/keys")
    assert 'X-API-Key: fdk_…"' in visit.page.inner_text("#quickstart-curl")
    key = visit.new_key("Create key", label="laptop")
    for block in ("#quickstart-curl", "#quickstart-python", "#quickstart-mcp"):
        assert key in visit.page.inner_text(block), block
    assert visit.page.get_attribute("#reference-link", "href") == "/docs"
    assert visit.page.inner_text("nav a[aria-current=page]") == "Keys"
    visit.shoot("keys-quickstart")
    visit.page.reload()
    assert key not in visit.page.content()
    assert f"{key[:8]}…" in visit.page.inner_text("#quickstart-curl")
    assert "laptop" in visit.page.inner_text("#keys")
    visit.shoot("keys-quickstart-later")

    visit.go("/dashboard/billing")
    assert visit.page.inner_text("nav a[aria-current=page]") == "Plan & billing"
    comparison = visit.page.inner_text("#plan-comparison")
    for each in load_plans().values():
        assert each.name in comparison and f"{each.requests_per_day:,}" in comparison
    visit.page.locator("#plan-comparison").scroll_into_view_if_needed()
    visit.shoot("billing-compare")
