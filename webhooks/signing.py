"""Standard-Webhooks signing: secrets, their encryption at rest, and the signed request headers.

The sender must sign with the clear secret, so a secret cannot be stored as a one-way hash: it is
encrypted with Fernet (AES-128-CBC + HMAC-SHA256) under a server key that never enters the
database. The signature itself is the ``standardwebhooks`` library's.
"""

from __future__ import annotations

import base64
import datetime as dt
import secrets
from collections.abc import Sequence

from cryptography.fernet import Fernet, InvalidToken
from standardwebhooks.webhooks import Webhook

from findata.local_secrets import local_secret
from findata.settings import Settings

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32
USER_AGENT = "findata-webhooks/1"


def new_signing_secret() -> str:
    """A new endpoint secret: ``whsec_`` + base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


class SecretBox:
    """Encrypts and decrypts signing secrets with the server's key."""

    def __init__(self, key: bytes) -> None:
        self._fernet = Fernet(key)

    @classmethod
    def from_settings(cls, settings: Settings) -> SecretBox:
        """The configured key (``FINDATA_WEBHOOKS_SECRETS_KEY``), else this host's own key."""
        if settings.webhooks_secrets_key:
            return cls(settings.webhooks_secrets_key.encode())
        raw = local_secret(settings.home_dir, "webhooks.key")
        return cls(base64.urlsafe_b64encode(raw))

    def seal(self, secret: str) -> str:
        """The stored form of ``secret``."""
        return self._fernet.encrypt(secret.encode()).decode()

    def open(self, sealed: str) -> str:
        """The clear secret of a stored value (fails loudly under another key)."""
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except InvalidToken as exc:
            raise RuntimeError(
                "a webhook signing secret cannot be decrypted: FINDATA_WEBHOOKS_SECRETS_KEY "
                "differs from the key it was stored under"
            ) from exc


def signature_header(
    event_id: str, signed_at: dt.datetime, body: str, signing_secrets: Sequence[str]
) -> str:
    """``webhook-signature``: one ``v1,<base64>`` entry per secret, space-separated."""
    when = signed_at.astimezone(dt.UTC)  # the library reads the wall time as UTC
    return " ".join(Webhook(secret).sign(event_id, when, body) for secret in signing_secrets)


def signed_headers(
    event_id: str, signed_at: dt.datetime, body: str, signing_secrets: Sequence[str]
) -> dict[str, str]:
    """Every header of a delivery attempt signed at ``signed_at``."""
    return {
        "webhook-id": event_id,
        "webhook-timestamp": str(int(signed_at.timestamp())),
        "webhook-signature": signature_header(event_id, signed_at, body, signing_secrets),
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }
