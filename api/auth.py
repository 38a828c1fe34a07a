"""API keys on requests: where a key is read (``read_key``) and what it resolves to
(``authenticate``), exactly as the spec's "Where the key is read" and "Keyless access" say."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from findata.accounts.keys import is_complete_key
from findata.accounts.store import AccountStore, KeyOwner
from findata.api.errors import AccountDisabled, Unauthorized

KeyMode = Literal["required", "optional"]

#: where a key is read, in the order read
READ_HEADER = "x-api-key"
READ_PARAMETER = "api_key"
AUTHORIZATION = "authorization"
#: names people put keys under that are not read; a 401 names the one found
OTHER_HEADERS = ("api-key", "apikey", "x-api-token", "token")
OTHER_PARAMETERS = ("apikey", "key", "token", "access_token")

PLACE_HEADER = "X-API-Key header"
PLACE_PARAMETER = "api_key query parameter"


@dataclass(frozen=True)
class KeyCheck:
    """A request's key checked: its owner (None: keyless) and the newest published version's
    id read with it (None when not read: keyless, or nothing published yet), which a data
    request then need not read again."""

    owner: KeyOwner | None
    newest_version_id: int | None = None


KEYLESS = KeyCheck(None)


@dataclass(frozen=True)
class KeyReading:
    """What a request carries: a complete key read from ``place``, or the problem found there.

    ``problem`` is ``incomplete`` (a value in X-API-Key or api_key that is not a whole key),
    ``authorization_not_bearer`` (an Authorization value that is not Bearer plus a whole key),
    ``other_name`` (a value under a name that is not read) or ``missing``.
    """

    key: str | None
    place: str | None
    problem: Literal["incomplete", "authorization_not_bearer", "other_name", "missing"] | None


def read_key(headers: Mapping[str, str], query: Mapping[str, str]) -> KeyReading:
    """Read the key from the first place that carries one (empty values count as absent)."""
    for name, place in ((READ_HEADER, PLACE_HEADER), (READ_PARAMETER, PLACE_PARAMETER)):
        value = (headers if name == READ_HEADER else query).get(name, "")
        if value:
            if is_complete_key(value):
                return KeyReading(value, place, None)
            return KeyReading(None, place, "incomplete")
    authorization = headers.get(AUTHORIZATION, "")
    if authorization:
        scheme, _, credentials = authorization.strip().partition(" ")
        credentials = credentials.strip()
        if scheme.lower() == "bearer" and is_complete_key(credentials):
            return KeyReading(credentials, "Authorization header", None)
        return KeyReading(None, "Authorization header", "authorization_not_bearer")
    for name in OTHER_HEADERS:
        if headers.get(name):
            return KeyReading(None, f"'{name}' header", "other_name")
    for name in OTHER_PARAMETERS:
        if query.get(name):
            return KeyReading(None, f"'{name}' query parameter", "other_name")
    return KeyReading(None, None, "missing")


def authenticate(reading: KeyReading, store: AccountStore, mode: KeyMode) -> KeyCheck:
    """The key's owner (with the newest version's id, read with it), or ``KEYLESS`` for a
    keyless request where keys are optional.

    Raises the spec's 401 for each refused cause and 403 for a disabled account. Where a key is
    optional (resolve, search) only a wrong value in X-API-Key or api_key, or a well-formed
    Bearer key that is revoked or unknown, is refused; everything else is answered as keyless.
    """
    if reading.key is None:
        assert reading.problem is not None
        if mode == "optional" and reading.problem != "incomplete":
            return KEYLESS
        raise Unauthorized(reading.problem, place=reading.place or "")
    owner, newest_version_id = store.find_key_and_newest_version(reading.key)
    if owner is None:
        raise Unauthorized("unrecognised")
    if owner.revoked_at is not None:
        raise Unauthorized("revoked", revoked_on=owner.revoked_at.date().isoformat())
    if not owner.account.enabled:
        raise AccountDisabled()
    store.note_key_use(owner)
    return KeyCheck(owner, newest_version_id)
