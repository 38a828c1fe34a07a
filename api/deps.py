"""FastAPI dependencies as ``Annotated`` aliases: what a route may ask for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Request

from findata.accounts.store import AccountStore, KeyOwner
from findata.api.auth import KEYLESS, KeyCheck, KeyMode, authenticate, read_key


def get_store(request: Request) -> AccountStore:
    """The accounts and keys of the control plane."""
    return request.app.state.accounts


Store = Annotated[AccountStore, Depends(get_store)]


def check_key(request: Request, store: AccountStore, mode: KeyMode) -> KeyCheck:
    """The request's key checked as ``mode`` says (401/403 when refused)."""
    checked = authenticate(read_key(request.headers, request.query_params), store, mode)
    if checked.owner is not None:
        # the request's log line names the account
        request.state.account_id = checked.owner.account.id
    return checked


def require_key(request: Request, store: Store) -> KeyOwner:
    """The owner of the request's key; 401/403 otherwise."""
    owner = check_key(request, store, "required").owner
    assert owner is not None
    return owner


def optional_key(request: Request, store: Store) -> KeyOwner | None:
    """The owner of the request's key, or None for a keyless request (resolve, search)."""
    return check_key(request, store, "optional").owner


CurrentKey = Annotated[KeyOwner, Depends(require_key)]
OptionalKey = Annotated[KeyOwner | None, Depends(optional_key)]


#: how each contract's ``key`` setting checks the key, as the generated routes do it in one step
#: (``never``: no key is read, as ``/v1/status`` gives the same answer with any key or none)
KEY_CHECKS: dict[str, Callable[[Request, AccountStore], KeyCheck]] = {
    "required": lambda request, store: check_key(request, store, "required"),
    "optional": lambda request, store: check_key(request, store, "optional"),
    "never": lambda _request, _store: KEYLESS,
}
