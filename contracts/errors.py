"""The error catalogue (``contracts/errors.yaml``): each error code's status and fixed texts."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict

ERRORS_FILE = Path(__file__).parent / "errors.yaml"

UnauthorizedCause = Literal[
    "missing", "incomplete", "authorization_not_bearer", "other_name", "revoked", "unrecognised"
]


class ErrorKind(BaseModel):
    """One error code of the spec."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    status: int
    error: str | None = None
    """The body's ``error`` text when it is not the code itself (may hold ``{placeholders}``)."""
    message: bool | str = False
    """``True``: ``message`` repeats ``detail``; a string: that fixed text; ``False``: absent."""
    detail: str | None = None
    """The fixed ``detail`` of codes that always say the same."""
    retry_after: Literal["next_hour", "next_day"] | None = None
    """Codes whose body carries ``retry_after_seconds``, counted to this boundary (UTC)."""


class ErrorCatalogue(BaseModel):
    """The whole catalogue."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    errors: dict[str, ErrorKind]
    unauthorized_details: dict[UnauthorizedCause, str]
    not_found_details: dict[str, str]


@cache
def load_errors() -> ErrorCatalogue:
    """The catalogue, validated."""
    return ErrorCatalogue.model_validate(yaml.safe_load(ERRORS_FILE.read_text()))
