"""API key format, generation and hashing. A key is ``fdk_`` + 32 lowercase hex characters."""

from __future__ import annotations

import hashlib
import re
import secrets

KEY_PREFIX = "fdk_"
KEY_PATTERN = re.compile(r"fdk_[0-9a-f]{32}")
VISIBLE_PREFIX_LENGTH = 8  # fdk_ and 4 hex characters: enough to tell keys apart, 16 bits only


def new_key() -> str:
    """A fresh key: 128 bits from the operating system's cryptographic random source."""
    return KEY_PREFIX + secrets.token_hex(16)


def is_complete_key(value: str) -> bool:
    """Whether ``value`` is exactly one well-formed key (no quotes, spaces or prefix word)."""
    return KEY_PATTERN.fullmatch(value) is not None


def key_hash(key: str) -> str:
    """The stored form of a key: SHA-256 hex (keys carry 128 random bits: a fast hash is safe)."""
    return hashlib.sha256(key.encode()).hexdigest()


def visible_prefix(key: str) -> str:
    """The part of a key shown in listings and logs."""
    return key[:VISIBLE_PREFIX_LENGTH]
