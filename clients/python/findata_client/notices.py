"""Python warnings for what the service reports without failing: a body's ``warnings`` (spec,
"Warnings") and the notice that this client version is outdated (spec, "Versioning")."""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import FrameType

_PACKAGE = str(Path(__file__).resolve().parent)
_outdated_lock = threading.Lock()
_outdated_warned = False


class FindataWarning(UserWarning):
    """A warning the service sent in a body's ``warnings`` (an unknown field or parameter
    ignored, the Free history floor, a ticker served at company level, ambiguous tickers)."""


class OutdatedClientWarning(FindataWarning):
    """The service recommends a newer findata-python (``X-Service-Client-Update: true``)."""


class PartialResultWarning(FindataWarning):
    """A result asked for with ``allow_partial=True`` holds only the rows fetched before the
    plan's page limit stopped its paging."""


def _stacklevel() -> int:
    """The stacklevel of the first frame outside this package, so a warning names the user's
    line (``warnings.warn``'s ``skip_file_prefixes`` needs Python 3.12)."""
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    return level


def warn_body_warnings(texts: Iterable[str], seen: set[str]) -> list[str]:
    """Warn each text not in ``seen`` (then add it), so each distinct warning is emitted once
    per result; the texts warned now."""
    fresh = []
    for text in texts:
        if text not in seen:
            seen.add(text)
            fresh.append(text)
            warnings.warn(text, FindataWarning, stacklevel=_stacklevel())
    return fresh


def warn_partial_result(text: str) -> None:
    """Warn that a result holds only part of its rows."""
    warnings.warn(text, PartialResultWarning, stacklevel=_stacklevel())


def note_client_notice(headers: Mapping[str, str]) -> None:
    """Warn, once per process, when the service says this client is outdated, with its
    message (``X-Service-Client-Update-Message``)."""
    global _outdated_warned
    if headers.get("x-service-client-update", "").strip().lower() != "true":
        return
    with _outdated_lock:
        if _outdated_warned:
            return
        _outdated_warned = True
    message = headers.get("x-service-client-update-message") or (
        "findata-python is outdated; upgrade it (pip install --upgrade findata-python)"
    )
    warnings.warn(message, OutdatedClientWarning, stacklevel=_stacklevel())
