"""The outbox of e-mail to account holders (``account_notices``): queued in the transaction that
decides to send, sent and retried by the mailer (``accounts/mailer.py``).

A message that carries a secret (a verification or password-reset link) is stored encrypted
with this host's mail key, never in clear; the mailer opens it just before sending.
"""

from __future__ import annotations

import base64
import datetime as dt

import sqlalchemy as sa
from cryptography.fernet import Fernet, InvalidToken

from findata.control_plane.schema import account_notices
from findata.local_secrets import local_secret
from findata.settings import Settings


class NoticeBox:
    """Encrypts and opens the bodies of sensitive messages."""

    def __init__(self, key: bytes) -> None:
        self._fernet = Fernet(key)

    @classmethod
    def from_settings(cls, settings: Settings) -> NoticeBox:
        """The configured key (``FINDATA_MAIL_SECRETS_KEY``), else this host's own key."""
        if settings.mail_secrets_key:
            return cls(settings.mail_secrets_key.encode())
        return cls(base64.urlsafe_b64encode(local_secret(settings.home_dir, "mail.key")))

    def seal(self, body: str) -> str:
        """The stored form of ``body``."""
        return self._fernet.encrypt(body.encode()).decode()

    def open(self, sealed: str) -> str:
        """The clear body of a stored one (fails loudly under another key)."""
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except InvalidToken as exc:
            raise RuntimeError(
                "a queued message cannot be decrypted: FINDATA_MAIL_SECRETS_KEY differs from "
                "the key it was stored under"
            ) from exc


def queue_notice(
    connection: sa.Connection,
    *,
    account_id: str,
    email: str,
    kind: str,
    subject: str,
    body: str,
    now: dt.datetime,
    box: NoticeBox | None = None,
) -> int:
    """Queue a message to ``email`` (sent at once by the next mailer pass); with ``box`` the
    body is sensitive and stored encrypted. Returns the notice id."""
    stored = box.seal(body) if box is not None else body
    inserted = connection.execute(
        account_notices.insert().values(
            account_id=account_id,
            email=email,
            kind=kind,
            subject=subject,
            body=stored,
            created_at=now,
            sensitive=box is not None,
            attempts=0,
            next_attempt_at=now,
        )
    )
    return int(inserted.inserted_primary_key[0])
