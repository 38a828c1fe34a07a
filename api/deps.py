"""FastAPI dependencies as ``Annotated`` aliases: what a route may ask for."""

from __future__ import annotations

from typing import Annotated

import sqlalchemy as sa
from fastapi import Depends, Request

from findata.accounts.store import AccountStore, KeyOwner
from findata.api.auth import authenticate, read_key
from findata.clock import Clock


def get_store(request: Request) -> AccountStore:
    """The accounts and keys of the control plane."""
    return request.app.state.accounts


def get_control_plane(request: Request) -> sa.Engine:
    """The control-plane engine (versions, change records, usage)."""
    return request.app.state.engine


def get_clock(request: Request) -> Clock:
    """The app's clock (a ``ManualClock`` in tests)."""
    return request.app.state.clock


def require_key(request: Request, store: Annotated[AccountStore, Depends(get_store)]) -> KeyOwner:
    """The owner of the request's key; 401/403 otherwise."""
    owner = authenticate(read_key(request.headers, request.query_params), store, "required")
    assert owner is not None
    return owner


def optional_key(
    request: Request, store: Annotated[AccountStore, Depends(get_store)]
) -> KeyOwner | None:
    """The owner of the request's key, or None for a keyless request (resolve, search)."""
    return authenticate(read_key(request.headers, request.query_params), store, "optional")


Store = Annotated[AccountStore, Depends(get_store)]
ControlPlane = Annotated[sa.Engine, Depends(get_control_plane)]
AppClock = Annotated[Clock, Depends(get_clock)]
CurrentKey = Annotated[KeyOwner, Depends(require_key)]
OptionalKey = Annotated[KeyOwner | None, Depends(optional_key)]
