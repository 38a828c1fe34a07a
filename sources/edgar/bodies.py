"""Is a body the file that was asked for? Checked before anything lands.

EDGAR answers some failures with status 200: an HTML page ("Request Rate Threshold Exceeded",
a maintenance notice) where JSON, XML or a zip was asked for, or a download cut short. Each kind
of file has a check here; a body that fails it is retried and never landed.
"""

from __future__ import annotations

import json
import zipfile
from enum import StrEnum
from pathlib import Path

from lxml import etree


class Kind(StrEnum):
    """The kinds of file fetched from the SEC, by how their bodies are checked."""

    JSON = "json"
    XML = "xml"
    ZIP = "zip"
    FORM_INDEX = "form_index"


class UnexpectedBody(Exception):
    """The body is not a whole file of the kind asked for."""


_HTML_STARTS = (b"<!doctype html", b"<html", b"<head", b"<body")


def check_body(kind: Kind, path: Path) -> None:
    """Raise ``UnexpectedBody`` unless the file at ``path`` is a whole file of ``kind``."""
    with path.open("rb") as file:
        start = file.read(512).lstrip().lower()
    if not start:
        raise UnexpectedBody("an empty body")
    if start.startswith(_HTML_STARTS):
        raise UnexpectedBody("an HTML page where a file was asked for")
    if kind is Kind.JSON:
        try:
            json.loads(path.read_bytes())
        except ValueError as error:
            raise UnexpectedBody(f"JSON that does not parse ({error})") from error
    elif kind is Kind.XML:
        try:
            etree.parse(str(path), etree.XMLParser(resolve_entities=False, no_network=True))
        except etree.XMLSyntaxError as error:
            raise UnexpectedBody(f"XML that does not parse ({error})") from error
    elif kind is Kind.ZIP:
        try:
            with zipfile.ZipFile(path) as archive:
                broken = archive.testzip()
        except (zipfile.BadZipFile, EOFError, OSError) as error:
            raise UnexpectedBody(f"a zip that does not open ({error})") from error
        if broken is not None:
            raise UnexpectedBody(f"a zip whose member {broken} is damaged")
    elif kind is Kind.FORM_INDEX:
        lines = path.read_bytes().rstrip().splitlines()
        if not any(line.startswith(b"Form Type") for line in lines[:20]):
            raise UnexpectedBody("a form index without its header")
        # every entry ends with its file name; a day without filings ends with the header's rule
        if not (lines[-1].endswith(b".txt") or set(lines[-1].strip()) == {ord("-")}):
            raise UnexpectedBody("a form index cut short")
