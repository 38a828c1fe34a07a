"""The keys page, by the plan's rules (contracts/plans.yaml): Free and Pro hold one key and
Regenerate it; Max and Redistribution create keys up to their limit and revoke them one by one.
Keys carry labels. A new key is shown once, on the page the form leads to (post/redirect/get:
a reload creates nothing), with the quickstart filled in with it; afterwards only its prefix,
label, dates and state. Regenerating and revoking ask for confirmation first."""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import APIRouter
from starlette.responses import Response

from findata.accounts.store import AccountError, IssuedKey, KeyLimitReached, KeyNotFound
from findata.api.dashboard.deps import Member
from findata.api.dashboard.page import Page, form_text
from findata.api.dashboard.quickstart import OPENAPI, REFERENCE, key_hint, quickstart
from findata.contracts.plans import plan

router = APIRouter(prefix="/dashboard/keys")
PAGE = "/dashboard/keys"
REGENERATE = "/dashboard/keys/regenerate"
#: what the session holds for the keys page: the key just created, to show once
NEW_KEY = "new-key"
VERIFY_FIRST = "Confirm your e-mail address first: follow the link we sent you."


def _active(page: Page) -> list[dict[str, object]]:
    keys = page.services.accounts.list_keys(page.signed_in.account.id)
    return [key for key in keys if key["revoked_at"] is None]


def _keys_page(
    page: Page, status: int = 200, new_key: str | None = None, **context: object
) -> Response:
    """The keys page; the quickstart shows ``new_key`` (its one display) or the newest active
    key's prefix."""
    account = page.signed_in.account
    keys = page.services.accounts.list_keys(account.id)
    active = [key for key in keys if key["revoked_at"] is None]
    shown = new_key or key_hint(str(active[0]["prefix"]) if active else None)
    return page.render(
        "keys.html",
        status=status,
        plan=plan(account.plan),
        keys=keys,
        active_count=len(active),
        new_key=new_key,
        quickstart=quickstart(page.services.settings.base_url, shown),
        reference=REFERENCE,
        openapi=OPENAPI,
        **context,
    )


def _issue(page: Page, label: str) -> Response:
    """Create or regenerate a key; it is held for the keys page to show once."""
    if not page.signed_in.email_verified:
        return _keys_page(page, status=403, error=VERIFY_FIRST)
    try:
        issued: IssuedKey = page.services.accounts.create_key(page.signed_in.account.id, label)
    except KeyLimitReached as refused:
        message = (
            f"Key limit reached: the {refused.plan.name} plan allows {refused.plan.active_keys} "
            "active keys. Revoke one first."
        )
        return _keys_page(page, status=409, error=message)
    except AccountError as refused:
        return _keys_page(page, status=400, error=str(refused), label=label)
    page.hold_once(NEW_KEY, key=issued.key, label=issued.label, revoked=len(issued.revoked_key_ids))
    return page.redirect(PAGE)


def _regenerates(page: Page) -> bool:
    """Whether a new key would revoke the current one (Free and Pro holding a key)."""
    rules = plan(page.signed_in.account.plan)
    return rules.key_rotation == "regenerate" and bool(_active(page))


@router.get("", include_in_schema=False)
def keys(page: Member) -> Response:
    """The account's keys, the quickstart, and a key just created (this once)."""
    shown = page.take_once(NEW_KEY)
    return _keys_page(
        page,
        new_key=shown.get("key"),
        new_label=shown.get("label"),
        revoked_count=shown.get("revoked", 0),
    )


@router.post("", include_in_schema=False)
async def create_key(page: Member) -> Response:
    """Create a key (Max and Redistribution up to their limit; Free and Pro their first). On
    Free and Pro a new key revokes the current one: that goes through the confirmation."""
    form = await page.form()
    label = form_text(form, "label")
    if _regenerates(page):
        return page.redirect(f"{REGENERATE}?{urlencode({'label': label})}")
    return _issue(page, label)


@router.get("/regenerate", include_in_schema=False)
def confirm_regenerate(page: Member, label: str = "") -> Response:
    """Ask before regenerating: the current key stops working at once."""
    current = _active(page)
    if not _regenerates(page):
        return page.redirect(PAGE)
    named = f" Its label: “{label.strip()}”." if label.strip() else ""
    return page.confirm(
        title="Regenerate your key?",
        message=f"The key {key_hint(str(current[0]['prefix']))} stops working at once: requests "
        f"with it get 401. The new key is shown once.{named}",
        button="Regenerate key",
        back=PAGE,
        fields={"label": label},
    )


@router.post("/regenerate", include_in_schema=False)
async def regenerate(page: Member) -> Response:
    """Revoke the current key and issue a new one (Free and Pro), confirmed."""
    form = await page.form()
    return _issue(page, form_text(form, "label"))


@router.get("/{key_id}/revoke", include_in_schema=False)
def confirm_revoke(page: Member, key_id: str) -> Response:
    """Ask before revoking one of the account's keys."""
    found = [key for key in _active(page) if str(key["id"]) == key_id]
    if not found:
        return _keys_page(page, status=404, error="No such active key on your account.")
    key = found[0]
    named = f"“{key['label']}” " if key["label"] else ""
    return page.confirm(
        title="Revoke this key?",
        message=f"The key {named}{key_hint(str(key['prefix']))} stops working at once: requests "
        "with it get 401. This cannot be undone.",
        button="Revoke key",
        back=PAGE,
    )


@router.post("/{key_id}/revoke", include_in_schema=False)
async def revoke_key(page: Member, key_id: str) -> Response:
    """Revoke one of the account's keys (another account's key is not found)."""
    await page.form()
    try:
        if not key_id.isdigit():
            raise KeyNotFound("no such key")
        page.services.accounts.revoke_key_id(page.signed_in.account.id, int(key_id))
    except KeyNotFound:
        return _keys_page(page, status=404, error="No such key on your account.")
    return page.redirect(PAGE, "The key is revoked: requests with it now get 401.")
