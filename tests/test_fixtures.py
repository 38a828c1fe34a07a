"""The fixtures are the published bytes: every file under tests/fixtures is a byte-identical copy
of a published file, checked against the SHA-256 prefixes of SHA256SUMS (SOURCES.md there says
where each came from, with the same prefixes), or a crafted file (CRAFTED.yaml) that is such a
copy with the exact edits listed there."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

FIXTURES = Path(__file__).parent / "fixtures"
MANIFEST = FIXTURES / "SHA256SUMS"
CRAFTED = FIXTURES / "CRAFTED.yaml"
SOURCES = FIXTURES / "SOURCES.md"


def _manifest() -> dict[str, str]:
    entries = (line.split(maxsplit=1) for line in MANIFEST.read_text().splitlines() if line)
    return {path: prefix for prefix, path in entries}


def _crafted() -> dict[str, dict[str, Any]]:
    return yaml.safe_load(CRAFTED.read_text(encoding="utf-8"))


def test_every_fixture_is_in_the_manifest() -> None:
    files = {
        str(p.relative_to(FIXTURES))
        for p in FIXTURES.rglob("*")
        if p.is_file() and p not in (MANIFEST, CRAFTED, SOURCES)
    }
    assert files == set(_manifest()) | set(_crafted())
    assert not set(_manifest()) & set(_crafted())


@pytest.mark.parametrize(("path", "recipe"), sorted(_crafted().items()))
def test_crafted_fixture_is_a_published_file_with_its_edits(
    path: str, recipe: dict[str, Any]
) -> None:
    assert recipe["from"] in _manifest() and recipe["why"]
    text = (FIXTURES / recipe["from"]).read_text(encoding="utf-8")
    for old, new in recipe["replace"]:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    assert (FIXTURES / path).read_text(encoding="utf-8") == text


@pytest.mark.parametrize(("path", "prefix"), sorted(_manifest().items()))
def test_fixture_is_the_published_file(path: str, prefix: str) -> None:
    assert hashlib.sha256((FIXTURES / path).read_bytes()).hexdigest()[:16] == prefix


def test_manifest_agrees_with_sources_md() -> None:
    text = SOURCES.read_text(encoding="utf-8")
    for path, prefix in _manifest().items():
        assert f"| {path} |" in text or f"| {Path(path).name} |" in text or path in text, path
        assert prefix in text, (path, prefix)
