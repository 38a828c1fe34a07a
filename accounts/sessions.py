"""Signed-in dashboard sessions as control-plane records, so that the server can end them.

A session is a random token in the browser's cookie; the control plane keeps only the token's
SHA-256 (as for API keys: 256 random bits make a fast hash safe), the account and the expiry.
Sign-out deletes the record; a password change or reset and disabling the account delete every
record of the account (``end_sessions``, in the caller's transaction). A cookie saved before
then finds no record and is anonymous.

A secret shown once (a new API key, a webhook signing secret) waits in the record between the
form's POST and the page that shows it (post/redirect/get), encrypted under a key derived from
the cookie's token, which the control plane does not have; showing it clears it.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import secrets
from typing import Any

import sqlalchemy as sa
from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from findata.accounts.tables import dashboard_sessions
from findata.clock import Clock, as_utc

#: a session lasts this long after sign-in
LIFETIME = dt.timedelta(days=14)
_ONCE_INFO = b"findata.dashboard.session.once"


def token_hash(token: str) -> str:
    """The stored form of a session token."""
    return hashlib.sha256(token.encode()).hexdigest()


def end_sessions(connection: sa.Connection, account_id: str) -> None:
    """In the caller's transaction: end every session of the account."""
    connection.execute(
        dashboard_sessions.delete().where(dashboard_sessions.c.account_id == account_id)
    )


class SessionRecords:
    """Dashboard sessions on one control-plane engine, with time from ``clock``."""

    def __init__(self, engine: sa.Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock

    def start(self, account_id: str) -> str:
        """A new session of the account; returns its token (for the cookie only). Expired
        sessions of every account are deleted on the way."""
        token = secrets.token_urlsafe(32)
        now = self.clock.now()
        with self.engine.begin() as connection:
            connection.execute(
                dashboard_sessions.delete().where(dashboard_sessions.c.expires_at <= now)
            )
            connection.execute(
                dashboard_sessions.insert().values(
                    token_hash=token_hash(token),
                    account_id=account_id,
                    created_at=now,
                    expires_at=now + LIFETIME,
                )
            )
        return token

    def account_of(self, token: str) -> str | None:
        """The account of the live session ``token``; None when it was ended, has expired or
        never existed."""
        presented = token_hash(token)
        with self.engine.connect() as connection:
            row = connection.execute(
                sa.select(
                    dashboard_sessions.c.token_hash,
                    dashboard_sessions.c.account_id,
                    dashboard_sessions.c.expires_at,
                ).where(dashboard_sessions.c.token_hash == presented)
            ).first()
        # found by hash; compared once more in constant time, as keys are
        if row is None or not hmac.compare_digest(row.token_hash, presented):
            return None
        if as_utc(row.expires_at) <= self.clock.now():
            return None
        return row.account_id

    def end(self, token: str) -> None:
        """End the session ``token`` (sign-out)."""
        with self.engine.begin() as connection:
            connection.execute(
                dashboard_sessions.delete().where(
                    dashboard_sessions.c.token_hash == token_hash(token)
                )
            )

    def hold_once(self, token: str, purpose: str, payload: dict[str, Any]) -> None:
        """Keep ``payload`` (it holds a secret) for the page of ``purpose`` to show once; it
        replaces whatever the session held."""
        sealed = _box(token).encrypt(json.dumps({"for": purpose, **payload}).encode()).decode()
        with self.engine.begin() as connection:
            connection.execute(
                dashboard_sessions.update()
                .where(dashboard_sessions.c.token_hash == token_hash(token))
                .values(once=sealed)
            )

    def take_once(self, token: str, purpose: str) -> dict[str, Any] | None:
        """What the session holds for ``purpose``, cleared as it is read (a reload, or a
        second tab, finds nothing); None when it holds nothing for ``purpose``."""
        stored = token_hash(token)
        with self.engine.begin() as connection:
            sealed = connection.execute(
                sa.select(dashboard_sessions.c.once).where(
                    dashboard_sessions.c.token_hash == stored
                )
            ).scalar_one_or_none()
            if sealed is None:
                return None
            try:
                payload = json.loads(_box(token).decrypt(sealed.encode()))
            except InvalidToken:
                return None
            if payload.pop("for", None) != purpose:
                return None
            # cleared only if still the value read: of two pages racing, one shows it
            taken = connection.execute(
                dashboard_sessions.update()
                .where(
                    dashboard_sessions.c.token_hash == stored, dashboard_sessions.c.once == sealed
                )
                .values(once=None)
            )
        return payload if taken.rowcount == 1 else None


def _box(token: str) -> Fernet:
    """The cipher of the session's held secret: its key derived from the cookie's token."""
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_ONCE_INFO).derive(
        token.encode()
    )
    return Fernet(base64.urlsafe_b64encode(key))
