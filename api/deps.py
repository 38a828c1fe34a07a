"""FastAPI dependencies as ``Annotated`` aliases: what a route may ask for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Request

from findata.accounts.store import AccountStore, KeyOwner
from findata.api.auth import authenticate, read_key


def get_store(request: Request) -> AccountStore:
    """The accounts and keys of the control plane."""
    return request.app.state.accounts


Store = Annotated[AccountStore, Depends(get_store)]


def require_key(request: Request, store: Store) -> KeyOwner:
    """The owner of the request's key; 401/403 otherwise."""
    owner = authenticate(read_key(request.headers, request.query_params), store, "required")
    assert owner is not None
    request.state.account_id = owner.account.id  # the request's log line names the account
    return owner


def optional_key(request: Request, store: Store) -> KeyOwner | None:
    """The owner of the request's key, or None for a keyless request (resolve, search)."""
    owner = authenticate(read_key(request.headers, request.query_params), store, "optional")
    if owner is not None:
        request.state.account_id = owner.account.id  # the request's log line names the account
    return owner


def no_key(_request: Request, _store: AccountStore) -> None:
    """No key is read (``/v1/status``: the same answer with any key or none)."""
    return None


CurrentKey = Annotated[KeyOwner, Depends(require_key)]
OptionalKey = Annotated[KeyOwner | None, Depends(optional_key)]


#: how each contract's ``key`` setting reads the owner, as the generated routes do it in one step
KEY_READERS: dict[str, Callable[[Request, AccountStore], KeyOwner | None]] = {
    "required": require_key,
    "optional": optional_key,
    "never": no_key,
}
