"""Hardened XML parsing and namespace-agnostic lookups for SEC filings.

SEC filers bind namespaces every way the XML rules allow: the 13F common namespace appears as
``com:``, ``ns1:`` or as a default namespace, information tables use ``ns1:`` or a default namespace
with unused extra prefixes, and Form 4 uses no namespace at all. Every lookup here therefore
matches elements by their *local* name only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from findata.sources.readers.errors import MalformedFileError

#: name used in error messages when the XML came from memory rather than a file
_BYTES_SOURCE = "<bytes>"


def _hardened_parser() -> etree.XMLParser:
    # Filings are untrusted input: no entity expansion (billion laughs, external entities),
    # no DTD or network fetches, and lxml's default size limits (huge_tree=False).
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
        dtd_validation=False,
        remove_comments=True,
        remove_pis=True,
    )


def parse_xml(source: str | Path | bytes, *, name: str | Path | None = None) -> etree._Element:
    """Parse a file path or XML bytes with a hardened parser and return the root element.

    ``name`` is the file named in errors when ``source`` is bytes (e.g. the submission file the
    bytes were cut from). Raises ``MalformedFileError`` for a missing or unreadable file, XML that
    is not well formed (with line and column), and documents that declare entities.
    """
    if isinstance(source, bytes):
        where: str | Path = name if name is not None else _BYTES_SOURCE
        data = source
    else:
        where = name if name is not None else source
        try:
            data = Path(source).read_bytes()
        except OSError as exc:
            raise MalformedFileError(where, f"cannot read file: {exc.strerror or exc}") from exc
    # A declaration is only legal at the very start; envelopes and editors leave blank lines
    # before it, which is harmless, so tolerate leading whitespace.
    data = data.lstrip()
    if not data:
        raise MalformedFileError(where, "empty file, expected an XML document")
    try:
        root = etree.fromstring(data, parser=_hardened_parser())
    except etree.XMLSyntaxError as exc:
        line, column = exc.position if exc.position else (exc.lineno, None)
        raise MalformedFileError(
            where, f"not well-formed XML at line {line}, column {column}: {exc.msg}"
        ) from exc
    dtd = root.getroottree().docinfo.internalDTD
    if dtd is not None and any(True for _ in dtd.iterentities()):
        # SEC filings never declare entities; one that does is hostile or broken.
        raise MalformedFileError(where, "document declares XML entities in a DOCTYPE")
    return root


def local_name(element: etree._Element) -> str:
    """The tag without its namespace (``{uri}value`` and ``ns1:value`` both give ``value``)."""
    tag = element.tag
    if not isinstance(tag, str):  # comments and processing instructions
        return ""
    return tag.rpartition("}")[2]


def iter_children(element: etree._Element, name: str) -> Iterator[etree._Element]:
    """Direct child elements named ``name`` (any namespace), in document order."""
    for child in element:
        if local_name(child) == name:
            yield child


def find_child(element: etree._Element | None, *path: str) -> etree._Element | None:
    """The first element reached by following child local names ``path``; None if absent."""
    current = element
    for name in path:
        if current is None:
            return None
        current = next(iter_children(current, name), None)
    return current


def iter_descendants(element: etree._Element, name: str) -> Iterator[etree._Element]:
    """Descendant elements (not ``element`` itself) named ``name``, in document order."""
    for node in element.iterdescendants():
        if local_name(node) == name:
            yield node


def find_descendant(element: etree._Element, name: str) -> etree._Element | None:
    """The first descendant element named ``name`` (any namespace); None if absent."""
    return next(iter_descendants(element, name), None)


def element_text(element: etree._Element | None) -> str | None:
    """All text inside ``element``, stripped; None when absent or blank."""
    if element is None:
        return None
    text = "".join(element.itertext()).strip()
    return text or None


def child_text(element: etree._Element | None, *path: str) -> str | None:
    """Stripped text of the element at child path ``path``; None when absent or blank."""
    return element_text(find_child(element, *path))


def footnote_ids_in(element: etree._Element) -> tuple[str, ...]:
    """Ids of every ``<footnoteId id=…>`` inside ``element``, document order, first seen only."""
    seen: dict[str, None] = {}
    for node in element.iter():
        if local_name(node) == "footnoteId":
            footnote_id = (node.get("id") or "").strip()
            if footnote_id:
                seen.setdefault(footnote_id, None)
    return tuple(seen)


@dataclass(frozen=True)
class ValueField:
    """An SEC "value or footnote" field: the ``<value>`` text (None if only footnotes) and ids."""

    value: str | None
    footnote_ids: tuple[str, ...]
    sourceline: int | None = None


def read_value_field(element: etree._Element | None, *path: str) -> ValueField:
    """Read the value-or-footnote field at child path ``path`` below ``element``.

    Form 4 writes ``<transactionShares><value>100</value><footnoteId id="F1"/></…>``; a field may
    carry only footnote ids (value None) or be absent altogether (value None, no ids). Text written
    straight into the field without a ``<value>`` wrapper is accepted as the value.
    """
    field = find_child(element, *path)
    if field is None:
        return ValueField(None, ())
    value_element = find_child(field, "value")
    if value_element is not None:
        value = element_text(value_element)
    else:
        value = (field.text or "").strip() or None
    ids = tuple(
        dict.fromkeys(
            node.get("id", "").strip()
            for node in iter_children(field, "footnoteId")
            if node.get("id", "").strip()
        )
    )
    line = value_element.sourceline if value_element is not None else field.sourceline
    return ValueField(value, ids, line)
