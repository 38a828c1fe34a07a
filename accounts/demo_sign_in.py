"""The demo's ready sign-in: a Max account with a confirmed address and a fresh password, so a
new user opens the dashboard right after ``findata demo`` without an e-mail round trip."""

from __future__ import annotations

import secrets

from findata.accounts.logins import Logins
from findata.accounts.store import AccountStore

DEMO_EMAIL = "demo@findata.example"
DEMO_PLAN = "max"


def ready_demo_sign_in(store: AccountStore, logins: Logins) -> tuple[str, str]:
    """The demo account's e-mail and a new password (each run sets another: only its hash is
    kept, so the one printed by the last run is the one that works)."""
    if store.find_account_by_email(DEMO_EMAIL) is None:
        store.create_account(DEMO_EMAIL, DEMO_PLAN)
    found = logins.reset_token(DEMO_EMAIL)
    assert found is not None
    password = secrets.token_urlsafe(12)
    # the reset path: sets the password and confirms the address in one step
    logins.reset_password(found[1], password)
    return DEMO_EMAIL, password
