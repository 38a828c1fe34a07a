"""The key check a generated route runs before its request, as its contract's ``key`` says."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from fastapi import Request

from findata.accounts.store import AccountStore
from findata.api.auth import KEYLESS, KeyCheck, KeyMode, authenticate, read_key


def check_key(request: Request, store: AccountStore, mode: KeyMode) -> KeyCheck:
    """The request's key checked as ``mode`` says (401/403 when refused)."""
    checked = authenticate(read_key(request.headers, request.query_params), store, mode)
    if checked.owner is not None:
        # the request's log line names the account
        request.state.account_id = checked.owner.account.id
    return checked


def no_key(_request: Request, _store: AccountStore) -> KeyCheck:
    """No key is read (``/v1/status``: the same answer with any key or none)."""
    return KEYLESS


#: how each contract's ``key`` setting checks the key, as the generated routes do it in one step
KEY_CHECKS: dict[str, Callable[[Request, AccountStore], KeyCheck]] = {
    "required": partial(check_key, mode="required"),
    "optional": partial(check_key, mode="optional"),
    "never": no_key,
}
