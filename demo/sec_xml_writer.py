"""A tiny deterministic XML writer and number formatter for the SEC serializers.

SEC's own XML is written by hand-rolled tools: empty elements appear as ``<a></a>`` while
``<footnoteId id="F1"/>`` is self-closed, and ``"`` in text is written ``&quot;``. lxml's
serializer cannot reproduce that, so the serializers build a small tree of ``Element`` values
and this module renders it as text, the same bytes for the same tree every time.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

# XML 1.0 forbids these characters even when escaped.
_FORBIDDEN_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@dataclass(frozen=True)
class Element:
    """One XML element: text (``""`` renders ``<a></a>``) or children (none renders ``<a/>``)."""

    tag: str
    children: tuple[Element, ...] = ()
    text: str | None = None
    attrs: tuple[tuple[str, str], ...] = ()


def element(tag: str, *children: Element | None, attrs: dict[str, str] | None = None) -> Element:
    """An element with child elements; ``None`` children are skipped (optional parts)."""
    kept = tuple(child for child in children if child is not None)
    return Element(tag, kept, None, tuple((attrs or {}).items()))


def text_element(tag: str, text: str) -> Element:
    """An element holding text only."""
    return Element(tag, (), text)


def escape_text(text: str) -> str:
    """Text or attribute value escaped as SEC's tools do (``&``, ``<``, ``>`` and ``"``)."""
    if _FORBIDDEN_CHARS.search(text):
        raise ValueError(f"character not allowed in XML: {text!r}")
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def render_lines(node: Element, indent: str, level: int = 0) -> list[str]:
    """The element as indented lines of text (no trailing newlines)."""
    pad = indent * level
    attrs = "".join(f' {name}="{escape_text(value)}"' for name, value in node.attrs)
    if node.text is not None:
        return [f"{pad}<{node.tag}{attrs}>{escape_text(node.text)}</{node.tag}>"]
    if not node.children:
        return [f"{pad}<{node.tag}{attrs}/>"]
    lines = [f"{pad}<{node.tag}{attrs}>"]
    for child in node.children:
        lines.extend(render_lines(child, indent, level + 1))
    lines.append(f"{pad}</{node.tag}>")
    return lines


def render_document(
    declaration: str, root: Element, indent: str, blank_line_between_top_level: bool = False
) -> bytes:
    """A whole document: declaration line, the root element, a final newline, UTF-8 encoded.

    ``blank_line_between_top_level`` puts an empty line between the root's children, as the
    Form 4 documents EDGAR serves have them.
    """
    attrs = "".join(f' {name}="{escape_text(value)}"' for name, value in root.attrs)
    lines = [declaration, f"<{root.tag}{attrs}>"]
    for child in root.children:
        if blank_line_between_top_level:
            lines.append("")
        lines.extend(render_lines(child, indent, 1))
    lines.append(f"</{root.tag}>")
    return ("\n".join(lines) + "\n").encode("utf-8")


def format_decimal(value: float | int, max_places: int) -> str:
    """A number in plain notation: rounded half up to ``max_places``, no trailing zeros.

    ``15.0`` gives ``"15"``, ``36.85670`` gives ``"36.8567"``, ``1e-05`` with 4 places gives
    ``"0"``. Floats go through their shortest repr first so binary noise never shows.
    """
    if isinstance(value, bool):
        raise TypeError(f"not a number: {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"not a finite number: {value!r}")
    number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    rounded = number.quantize(Decimal(1).scaleb(-max_places), rounding=ROUND_HALF_UP)
    text = f"{rounded:f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def sec_bool(flag: bool, style: str) -> str:
    """A boolean as SEC writes it: ``"1/0"`` style gives 1/0, ``"true/false"`` gives true/false."""
    if style == "1/0":
        return "1" if flag else "0"
    if style == "true/false":
        return "true" if flag else "false"
    raise ValueError(f"unknown boolean style: {style!r}")
