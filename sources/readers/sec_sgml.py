"""Reader for the EDGAR full-submission text file (``<SEC-DOCUMENT>`` SGML envelope).

EDGAR serves each accession as one ``.txt``: an ``<SEC-HEADER>`` of ``KEY:<tabs>VALUE`` lines
(``ACCESSION NUMBER:``, ``CONFORMED SUBMISSION TYPE:``, ``FILED AS OF DATE:`` …) followed by one
``<DOCUMENT>`` per file, each with ``<TYPE>``, ``<SEQUENCE>``, ``<FILENAME>`` lines and a ``<TEXT>``
block that, for XML documents, wraps the file in ``<XML>`` … ``</XML>``.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path

from findata.sources.readers.errors import MalformedFileError

_HEADER = re.compile(rb"<SEC-HEADER>(.*?)</SEC-HEADER>", re.DOTALL)
_DOCUMENT = re.compile(rb"<DOCUMENT>(.*?)</DOCUMENT>", re.DOTALL)
_TEXT = re.compile(rb"<TEXT>(.*?)</TEXT>", re.DOTALL)
_XML = re.compile(rb"<XML>(.*?)</XML>", re.DOTALL)
# ``KEY:`` followed by tabs/spaces and a value; section titles (``FILER:``) have no value
_HEADER_LINE = re.compile(r"^\s*([A-Z0-9][A-Z0-9 \-/]*?):[ \t]*(.*?)\s*$")
_ACCESSION = re.compile(r"^\d{10}-\d{2}-\d{6}$")


@dataclass(frozen=True)
class SubmissionDocument:
    """One ``<DOCUMENT>``; ``content`` is the XML bytes when the text is wrapped in ``<XML>``."""

    type: str
    sequence: int | None
    filename: str | None
    description: str | None
    is_xml: bool
    content: bytes


@dataclass(frozen=True)
class SubmissionText:
    """The header facts and documents of one full-submission text file."""

    path: str
    accession: str
    submission_type: str | None
    period_of_report: dt.date | None
    filed: dt.date | None
    header: dict[str, str]
    documents: tuple[SubmissionDocument, ...]


def read_submission_text(path: str | Path) -> SubmissionText:
    """Read a full-submission ``.txt`` into its header fields and documents.

    ``header`` keeps the first value of each top-level ``KEY:`` line (nested filer blocks repeat
    keys; the submission-level ones come first). Dates are ``YYYYMMDD`` in the envelope. Raises
    ``MalformedFileError`` when the file has no ``<SEC-HEADER>``, no valid ``ACCESSION NUMBER``,
    no ``<DOCUMENT>``, or a date that is not ``YYYYMMDD``.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise MalformedFileError(path, f"cannot read file: {exc.strerror or exc}") from exc
    header_match = _HEADER.search(data)
    if header_match is None:
        raise MalformedFileError(path, "no <SEC-HEADER> … </SEC-HEADER> block")
    header = _header_fields(header_match.group(1).decode("utf-8", errors="replace"))
    accession = header.get("ACCESSION NUMBER", "")
    if not _ACCESSION.match(accession):
        raise MalformedFileError(
            path, f"ACCESSION NUMBER is {accession!r}, expected 0000000000-00-000000"
        )
    documents = tuple(
        _document(path, match.group(1)) for match in _DOCUMENT.finditer(data, header_match.end())
    )
    if not documents:
        raise MalformedFileError(path, "no <DOCUMENT> in the submission")
    return SubmissionText(
        path=str(path),
        accession=accession,
        submission_type=header.get("CONFORMED SUBMISSION TYPE"),
        period_of_report=_header_date(path, header, "CONFORMED PERIOD OF REPORT"),
        filed=_header_date(path, header, "FILED AS OF DATE"),
        header=header,
        documents=documents,
    )


def _header_fields(text: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        match = _HEADER_LINE.match(line)
        if match and match.group(2):
            fields.setdefault(match.group(1).strip(), match.group(2))
    return fields


def _header_date(path: str | Path, header: dict[str, str], key: str) -> dt.date | None:
    text = header.get(key)
    if text is None:
        return None
    try:
        return dt.datetime.strptime(text, "%Y%m%d").date()
    except ValueError as exc:
        raise MalformedFileError(path, f"{key} is {text!r}, expected YYYYMMDD") from exc


def _document(path: str | Path, block: bytes) -> SubmissionDocument:
    text_match = _TEXT.search(block)
    # The tag lines (<TYPE>, <SEQUENCE>, …) precede <TEXT>; the body must not be searched for
    # them, since a document may well contain the same words.
    tags = _tag_lines(block[: text_match.start()] if text_match else block)
    doc_type = tags.get("TYPE")
    if not doc_type:
        raise MalformedFileError(path, "a <DOCUMENT> has no <TYPE>")
    sequence_text = tags.get("SEQUENCE")
    try:
        sequence = int(sequence_text) if sequence_text else None
    except ValueError as exc:
        raise MalformedFileError(
            path, f"<SEQUENCE> of document {doc_type!r} is {sequence_text!r}, not a number"
        ) from exc
    body = text_match.group(1) if text_match else b""
    xml_match = _XML.search(body)
    return SubmissionDocument(
        type=doc_type,
        sequence=sequence,
        filename=tags.get("FILENAME"),
        description=tags.get("DESCRIPTION"),
        is_xml=xml_match is not None,
        # The XML block starts with the newline after <XML>; strip it so the declaration leads.
        content=(xml_match.group(1) if xml_match else body).strip(),
    )


def _tag_lines(block: bytes) -> dict[str, str]:
    tags: dict[str, str] = {}
    for raw in block.decode("utf-8", errors="replace").splitlines():
        match = re.match(r"^<([A-Z\-]+)>(.*)$", raw.strip())
        if match:
            tags.setdefault(match.group(1), match.group(2).strip())
    return tags
