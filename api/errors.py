"""The one error model: typed exceptions carrying a catalogue code, rendered as the spec's body.

Every error response of the service goes through ``error_response``; the texts come from
``contracts/errors.yaml``.
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

from findata.contracts.errors import ErrorKind, UnauthorizedCause, load_errors


class ApiError(Exception):
    """An error answer: the catalogue ``code`` plus what this occurrence adds."""

    def __init__(
        self,
        code: str,
        detail: str | None = None,
        *,
        candidates: dict[str, list[Any]] | None = None,
        hint: str | None = None,
        retry_after_seconds: int | None = None,
        error_values: dict[str, object] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.code = code
        self.kind: ErrorKind = load_errors().errors[code]
        resolved = detail if detail is not None else self.kind.detail
        if resolved is None:
            raise ValueError(f"error {code} needs a detail")
        self.detail = resolved
        self.candidates = candidates
        self.hint = hint
        self.retry_after_seconds = retry_after_seconds
        self.error_values = error_values or {}
        self.headers = headers or {}
        super().__init__(f"{code}: {resolved}")

    @property
    def status(self) -> int:
        return self.kind.status

    def body(self) -> dict[str, Any]:
        """The spec's error body, in its field order; optional fields only where they apply."""
        error = self.kind.error.format(**self.error_values) if self.kind.error else self.code
        body: dict[str, Any] = {
            "error": error,
            "code": self.code,
            "status": self.status,
            "detail": self.detail,
        }
        if self.kind.message is True:
            body["message"] = self.detail
        elif self.kind.message:
            body["message"] = self.kind.message
        if self.candidates is not None:
            body["candidates"] = self.candidates
        if self.hint is not None:
            body["hint"] = self.hint
        if self.kind.retry_after is not None and self.retry_after_seconds is not None:
            body["retry_after_seconds"] = self.retry_after_seconds
        return body


class BadRequest(ApiError):
    """400 ``bad_request``."""

    def __init__(self, detail: str) -> None:
        super().__init__("bad_request", detail)


class Unauthorized(ApiError):
    """401 ``unauthorized``, one detail per cause (``place`` and ``revoked_on`` fill them in)."""

    def __init__(self, cause: UnauthorizedCause, **values: str) -> None:
        self.cause = cause
        super().__init__("unauthorized", load_errors().unauthorized_details[cause].format(**values))


class AccountDisabled(ApiError):
    """403 ``account_disabled``."""

    def __init__(self) -> None:
        super().__init__("account_disabled")


class NotFound(ApiError):
    """404 ``not_found``."""

    def __init__(self, detail: str) -> None:
        super().__init__("not_found", detail)


class UnknownEndpoint(NotFound):
    """404 for a path that is no endpoint (answered only after the key was accepted)."""

    def __init__(self) -> None:
        super().__init__(load_errors().not_found_details["unknown_endpoint"])


class MethodNotAllowed(ApiError):
    """405 ``method_not_allowed`` with ``Allow: GET``."""

    def __init__(self) -> None:
        super().__init__("method_not_allowed", headers={"Allow": "GET"})


class InternalError(ApiError):
    """500 ``internal_error``: says nothing of what went wrong inside."""

    def __init__(self) -> None:
        super().__init__("internal_error")


def error_response(error: ApiError, *, with_body: bool = True) -> Response:
    """The HTTP response of ``error`` (no body for HEAD)."""
    content = orjson.dumps(error.body()) if with_body else b""
    return Response(
        content=content,
        status_code=error.status,
        media_type="application/json",
        headers=error.headers,
    )
