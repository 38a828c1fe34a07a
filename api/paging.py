"""Opaque, tamper-proof page cursors (spec: "Pagination", "Versioning").

A cursor carries the paging scheme, the data version it pages through, the next row offset and
the next page's number, bound to the request (path and every parameter but ``limit``) and signed
with HMAC-SHA256 under a server secret. Pinning the version keeps every page of one query on the
same immutable snapshot, so no page boundary skips or repeats a row while new versions publish.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import orjson

from findata.api.errors import ApiError, BadRequest
from findata.local_secrets import local_secret

SCHEME = 2  # cursors of any other scheme are refused as "earlier paging scheme"
UNBOUND = ("limit", "cursor", "api_key")  # parameters a cursor is not bound to

INVALID = (
    "Invalid cursor: it was not issued by this service or it was altered. Pass back the "
    "next_cursor of the previous page as it was sent, or no cursor for the first page."
)
OTHER_REQUEST = (
    "Invalid cursor: it belongs to a different request. Page with the same path and parameters "
    "as the first page (only limit may change)."
)
EARLIER_SCHEME = (
    "Invalid cursor: it comes from an earlier paging scheme. Start again from the first page."
)
VERSION_GONE = (
    "Invalid cursor: the data version it pages through is no longer served. Start again from "
    "the first page."
)


@dataclass(frozen=True)
class CursorState:
    """Where the next page starts."""

    version: str
    offset: int
    page: int  # the number of the page this cursor asks for (the first page is 1)


def request_fingerprint(path: str, sent: Mapping[str, str]) -> str:
    """What a cursor is bound to: the path and every parameter but limit (and the key)."""
    bound = sorted((name, value) for name, value in sent.items() if name not in UNBOUND)
    return hashlib.sha256(orjson.dumps([path, bound])).hexdigest()[:32]


class CursorCodec:
    """Issues and reads cursors under one secret."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def issue(self, fingerprint: str, state: CursorState) -> str:
        """The cursor for ``state`` of the request ``fingerprint``."""
        payload = orjson.dumps(
            {"s": SCHEME, "r": fingerprint, "v": state.version, "o": state.offset, "p": state.page}
        )
        return f"{_b64(payload)}.{_b64(self._mac(payload))}"

    def read(self, cursor: str, fingerprint: str) -> CursorState:
        """The state in ``cursor``; 400 ``Invalid cursor…`` when it is not one we issued for
        this request."""
        body, _, mac = cursor.partition(".")
        try:
            payload = _unb64(body)
            signature = _unb64(mac)
        except (binascii.Error, ValueError) as error:
            raise BadRequest(INVALID) from error
        if not hmac.compare_digest(signature, self._mac(payload)):
            raise BadRequest(INVALID)
        try:
            fields = orjson.loads(payload)
            scheme = fields["s"]
        except (orjson.JSONDecodeError, KeyError, TypeError) as error:
            raise BadRequest(INVALID) from error
        if scheme != SCHEME:
            raise BadRequest(EARLIER_SCHEME)
        if not hmac.compare_digest(str(fields.get("r", "")), fingerprint):
            raise BadRequest(OTHER_REQUEST)
        return CursorState(version=fields["v"], offset=fields["o"], page=fields["p"])

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self._secret, payload, hashlib.sha256).digest()[:16]


class PaginationLimitReached(ApiError):
    """400 ``pagination_limit_reached``: the plan's pages per query are used up."""

    def __init__(self, plan_name: str, pages: int) -> None:
        super().__init__(
            "pagination_limit_reached",
            f"Pagination limit reached: the {plan_name} plan allows {pages} pages per query. "
            "Narrow the query (a shorter date range or fewer tickers) or split it.",
        )


def cursor_secret(configured: str | None, home: Path) -> bytes:
    """The server's cursor secret: the setting when given (the same on every host), else a
    random one kept in ``$FINDATA_HOME/secrets/cursor.key`` shared by the workers of one host."""
    if configured:
        return configured.encode()
    return local_secret(home, "cursor.key")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    if not text:
        raise ValueError("empty")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
