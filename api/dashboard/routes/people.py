"""Accounts for people: sign up, verify the e-mail address, sign in and out, reset and change
the password, and the page a disabled account sees."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from findata.accounts.logins import (
    LoginRefused,
    PasswordRejected,
    SignInThrottled,
    TokenInvalid,
)
from findata.accounts.store import AccountError
from findata.api.dashboard.deps import SIGN_IN, Member, Visitor
from findata.api.dashboard.mail import queue_mail, send_soon
from findata.api.dashboard.page import Page, form_text

router = APIRouter(prefix="/dashboard")
HOME = "/dashboard/keys"
RESET_SENT = "/dashboard/reset/sent"


def _safe_next(target: str) -> str:
    """Where to go after signing in: a dashboard page only (never another site)."""
    if target.startswith("/dashboard") and not target.startswith("//"):
        return target
    return HOME


def _verification_mail(page: Page, account_id: str) -> bool:
    person = page.services.logins.person(account_id)
    token = page.services.logins.verification_token(account_id)
    return queue_mail(
        page.services, person.account, "verify_email", "Confirm your e-mail address for findata",
        sensitive=True, token=token,
    )  # fmt: skip


@router.get("", include_in_schema=False)
def home(page: Visitor) -> Response:
    """The dashboard's entry: the keys page, or sign in."""
    return page.redirect(HOME if page.person else SIGN_IN)


@router.get("/sign-up", include_in_schema=False)
def sign_up_form(page: Visitor) -> Response:
    """The sign-up form (a free account needs no payment)."""
    return page.render("sign_up.html")


@router.post("/sign-up", include_in_schema=False)
async def sign_up(page: Visitor) -> Response:
    """Create a Free account, sign in, and send the verification e-mail."""
    form = await page.form()
    email, password = form_text(form, "email"), form_text(form, "password")
    try:
        person = page.services.logins.sign_up(email, password)
    except (AccountError, PasswordRejected) as refused:
        return page.render("sign_up.html", status=400, error=str(refused), email=email)
    page.sign_in(person.account.id)
    _verification_mail(page, person.account.id)
    return send_soon(page.services, page.redirect(HOME))


@router.get("/sign-in", include_in_schema=False)
def sign_in_form(page: Visitor, next: str = HOME) -> Response:
    """The sign-in form."""
    return page.render("sign_in.html", next=_safe_next(next))


@router.post("/sign-in", include_in_schema=False)
async def sign_in(page: Visitor) -> Response:
    """Check the password (throttled per account and per IP) and start the session."""
    form = await page.form()
    email, target = form_text(form, "email"), _safe_next(form_text(form, "next"))
    ip = page.request.client.host if page.request.client else "unknown"
    try:
        person = page.services.logins.sign_in(email, form_text(form, "password"), ip)
    except SignInThrottled as throttled:
        return page.render(
            "sign_in.html", status=429, error=str(throttled), email=email, next=target
        )
    except LoginRefused as refused:
        return page.render("sign_in.html", status=400, error=str(refused), email=email, next=target)
    page.sign_in(person.account.id)
    return page.redirect(target if person.account.enabled else "/dashboard/disabled")


@router.post("/sign-out", include_in_schema=False)
async def sign_out(page: Visitor) -> Response:
    """End the session, on the server too: a copy of the cookie is signed out as well."""
    await page.form()
    page.sign_out()
    return page.redirect(SIGN_IN)


@router.get("/disabled", include_in_schema=False)
def disabled(page: Visitor) -> Response:
    """A disabled account signs in and sees why; it can do nothing else."""
    if page.person is None:
        return page.redirect(SIGN_IN)
    if page.person.account.enabled:
        return page.redirect(HOME)
    return page.render("disabled.html")


@router.get("/verify", include_in_schema=False)
def verify(page: Visitor, token: str = "") -> Response:
    """The e-mail's link: the address is confirmed."""
    try:
        person = page.services.logins.verify_email(token)
    except TokenInvalid as refused:
        return page.render("message.html", status=400, title="Link not valid", error=str(refused))
    return page.render(
        "message.html", title="E-mail confirmed",
        message=f"Thank you: {person.account.email} is confirmed.", link=HOME,
    )  # fmt: skip


@router.post("/verify/resend", include_in_schema=False)
async def resend_verification(page: Member) -> Response:
    """Send the verification e-mail again (at most one every two minutes)."""
    await page.form()
    sent = _verification_mail(page, page.signed_in.account.id)
    notice = "We sent the e-mail again." if sent else "An e-mail went out moments ago."
    return send_soon(page.services, page.redirect(HOME, notice))


@router.get("/reset", include_in_schema=False)
def reset_form(page: Visitor) -> Response:
    """Ask for a password reset link."""
    return page.render("reset.html")


@router.post("/reset", include_in_schema=False)
async def reset(page: Visitor) -> Response:
    """Send a reset link if the address has an account; the answer is the same either way."""
    form = await page.form()
    email = form_text(form, "email")
    try:
        found = page.services.logins.reset_token(email)
    except AccountError:
        found = None
    if found is not None:
        account, token = found
        queue_mail(
            page.services, account, "password_reset", "Reset your findata password",
            sensitive=True, token=token,
        )  # fmt: skip
    return send_soon(page.services, page.redirect(RESET_SENT))


@router.get("/reset/sent", include_in_schema=False)
def reset_sent(page: Visitor) -> Response:
    """Where the reset form leads (a reload sends nothing again)."""
    return page.render(
        "message.html", title="Check your e-mail",
        message="If an account uses that address, a link to set a new password is on its way. "
        "It works for one hour.",
    )  # fmt: skip


@router.get("/reset/confirm", include_in_schema=False)
def reset_confirm_form(page: Visitor, token: str = "") -> Response:
    """The reset link's form for the new password (the token travels on in a hidden field)."""
    return page.render("reset_confirm.html", token=token)


@router.post("/reset/confirm", include_in_schema=False)
async def reset_confirm(page: Visitor) -> Response:
    """Set the new password and sign in (every session of the account ends first)."""
    form = await page.form()
    token = form_text(form, "token")
    try:
        person = page.services.logins.reset_password(token, form_text(form, "password"))
    except (TokenInvalid, PasswordRejected) as refused:
        return page.render("reset_confirm.html", status=400, token=token, error=str(refused))
    page.sign_in(person.account.id)
    return page.redirect(HOME, "Your password is set.")


@router.get("/account", include_in_schema=False)
def account(page: Member) -> Response:
    """The account page: address, plan, change password."""
    return page.render("account.html")


@router.post("/account/password", include_in_schema=False)
async def change_password(page: Member) -> Response:
    """Change the password (every other session ends; this browser gets a new one); wrong
    current passwords are throttled as failed sign-ins are."""
    form = await page.form()
    ip = page.request.client.host if page.request.client else "unknown"
    try:
        person = page.services.logins.change_password(
            page.signed_in.account.id, form_text(form, "current"), form_text(form, "password"), ip
        )
    except SignInThrottled as throttled:
        return page.render("account.html", status=429, error=str(throttled))
    except (LoginRefused, PasswordRejected) as refused:
        return page.render("account.html", status=400, error=str(refused))
    page.sign_in(person.account.id)
    return page.redirect("/dashboard/account", "Your password is changed.")
