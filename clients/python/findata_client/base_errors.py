"""The hand-written base of the client's exceptions: ``FindataError`` (an error response),
``FindataConnectionError`` (no response), and ``error_from_response``, which picks the class of
an error body's ``code`` from the classes the generated spec names.

The class per error code (``NotFoundError``, ``CursorExpiredError``, ...) is generated from
``contracts/errors.yaml`` into ``findata_client.errors``, the public module, which subclasses
these; nothing here imports it.

An error that stops a result's paging after its first page keeps what was fetched before it:
``error.rows`` (a ``RowList``, empty otherwise); a note (``add_note``) says what to do about a
page limit or a 504.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar

from findata_client.fetched import RowList

if TYPE_CHECKING:
    import httpx

#: body fields every error body has; the others are the error's ``extra``
_COMMON_FIELDS = frozenset({"error", "code", "status", "detail", "message"})
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


class FindataError(Exception):
    """An error response: its HTTP ``status``, the body's ``code`` and ``detail``, the whole
    ``body``, and ``extra``: the body's fields beyond ``error``/``code``/``status``/
    ``detail``/``message`` (``candidates``, ``hint``, ``retry_after_seconds``) plus the values
    a fixed detail text carries (``revoked_on`` of a revoked key's 401, ``place``)."""

    #: the error code and status a generated subclass stands for (None here)
    CODE: ClassVar[str | None] = None
    STATUS: ClassVar[int | None] = None
    #: the code's fixed detail texts that carry values (``{revoked_on}``), as generated
    DETAILS: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        status: int,
        code: str | None,
        detail: str,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(f"{status} {code or 'error'}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.body: dict[str, Any] = dict(body or {})
        self.headers: dict[str, str] = dict(headers or {})
        self.extra: dict[str, Any] = {
            **_detail_values(self.DETAILS, detail),
            **{k: v for k, v in self.body.items() if k not in _COMMON_FIELDS},
        }
        self.rows = RowList()

    def __reduce__(self) -> tuple[Any, ...]:
        # rebuilt from its parts (the default would call __init__ with the message alone),
        # then its attributes (rows, notes) restored
        args = (self.status, self.code, self.detail, self.body, self.headers)
        return type(self), args, self.__dict__

    @property
    def message(self) -> str | None:
        """The body's ``message`` (on 401, 403, the page-limit 400 and some 429s)."""
        value = self.body.get("message")
        return value if isinstance(value, str) else None

    @property
    def retry_after_seconds(self) -> int | None:
        """Seconds to wait before sending again, where the body says (request-limit 429s)."""
        value = self.extra.get("retry_after_seconds")
        return value if isinstance(value, int) else None

    @property
    def candidates(self) -> dict[str, list[Any]] | None:
        """409: each ambiguous ticker's candidates."""
        value = self.extra.get("candidates")
        return value if isinstance(value, dict) else None

    @property
    def hint(self) -> str | None:
        """409: what to send instead (``pass entity_id=``)."""
        value = self.extra.get("hint")
        return value if isinstance(value, str) else None

    @property
    def revoked_on(self) -> dt.date | None:
        """401 for a revoked key: the day it was revoked."""
        value = self.extra.get("revoked_on")
        try:
            return dt.date.fromisoformat(value) if isinstance(value, str) else None
        except ValueError:
            return None


class FindataConnectionError(Exception):
    """The service could not be reached, or did not answer in time, on every attempt;
    ``rows``: the rows a result fetched before this stopped its paging."""

    def __init__(self, message: str, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.rows = RowList()

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (str(self), self.attempts), self.__dict__


def error_from_response(
    response: httpx.Response, classes: Mapping[str, type[FindataError]]
) -> FindataError:
    """The exception for an error response: the class of its body's ``code`` among
    ``classes`` (the generated ``ERROR_CLASSES``), or a plain ``FindataError`` (``code`` None)
    when the body is not the spec's error body."""
    headers = dict(response.headers)
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    if isinstance(body, dict) and isinstance(body.get("code"), str):
        code = body["code"]
        detail = body.get("detail") or body.get("error") or ""
        cls = classes.get(code, FindataError)
        return cls(response.status_code, code, str(detail), body, headers)
    text = response.text.strip()
    detail = text[:200] if text else (response.reason_phrase or "no body")
    return FindataError(response.status_code, None, detail, None, headers)


@cache
def _detail_patterns(templates: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    """Fixed detail texts with placeholders (contracts/errors.yaml), as patterns capturing the
    values."""
    patterns = []
    for template in templates:
        parts = _PLACEHOLDER.split(template)
        # split alternates text and placeholder names: text, name, text, name, ..., text
        regex = "".join(
            re.escape(part) if i % 2 == 0 else f"(?P<{part}>.+?)" for i, part in enumerate(parts)
        )
        patterns.append(re.compile(regex))
    return tuple(patterns)


def _detail_values(templates: tuple[str, ...], detail: str) -> dict[str, str]:
    """The values a templated detail carries (e.g. ``revoked_on``), if it is one."""
    for pattern in _detail_patterns(templates):
        found = pattern.fullmatch(detail)
        if found:
            return found.groupdict()
    return {}
