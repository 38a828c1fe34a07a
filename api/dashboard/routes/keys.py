"""The keys page, by the plan's rules (contracts/plans.yaml): Free and Pro hold one key and
Regenerate it; Max and Redistribution create keys up to their limit and revoke them one by one.
A new key is shown once; afterwards only its prefix, dates and state."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from findata.accounts.store import IssuedKey, KeyLimitReached, KeyNotFound
from findata.api.dashboard.deps import Member
from findata.api.dashboard.page import Page
from findata.contracts.plans import plan

router = APIRouter(prefix="/dashboard/keys")
VERIFY_FIRST = "Confirm your e-mail address first: follow the link we sent you."


def _keys_page(page: Page, status: int = 200, **context: object) -> Response:
    account = page.signed_in.account
    keys = page.services.accounts.list_keys(account.id)
    active = [key for key in keys if key["revoked_at"] is None]
    return page.render(
        "keys.html",
        status=status,
        plan=plan(account.plan),
        keys=keys,
        active_count=len(active),
        **context,
    )


@router.get("", include_in_schema=False)
def keys(page: Member) -> Response:
    """The account's keys."""
    return _keys_page(page)


@router.post("", include_in_schema=False)
async def create_key(page: Member) -> Response:
    """Create (Max, Redistribution) or regenerate (Free, Pro) a key; the key is shown once."""
    await page.form()
    if not page.signed_in.email_verified:
        return _keys_page(page, status=403, error=VERIFY_FIRST)
    try:
        issued: IssuedKey = page.services.accounts.create_key(page.signed_in.account.id)
    except KeyLimitReached as refused:
        message = (
            f"Key limit reached: the {refused.plan.name} plan allows {refused.plan.active_keys} "
            "active keys. Revoke one first."
        )
        return _keys_page(page, status=409, error=message)
    return _keys_page(page, new_key=issued.key, revoked_count=len(issued.revoked_key_ids))


@router.post("/{key_id}/revoke", include_in_schema=False)
async def revoke_key(page: Member, key_id: int) -> Response:
    """Revoke one of the account's keys (another account's key is not found)."""
    await page.form()
    try:
        page.services.accounts.revoke_key_id(page.signed_in.account.id, key_id)
    except KeyNotFound:
        return _keys_page(page, status=404, error="No such key on your account.")
    return page.redirect("/dashboard/keys", "The key is revoked: requests with it now get 401.")
