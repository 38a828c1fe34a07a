"""Loading a JSON landing file whose top level must be an object."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from findata.sources.readers.errors import MalformedFileError


def load_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; an unreadable file, bad JSON or another top-level type is a
    ``MalformedFileError`` naming the file."""
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise MalformedFileError(path, f"cannot read file: {error}") from error
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        raise MalformedFileError(path, f"not JSON: {error}") from error
    if not isinstance(document, dict):
        raise MalformedFileError(
            path, f"top level is a JSON {type(document).__name__}, not an object"
        )
    return document
