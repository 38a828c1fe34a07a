"""Dependencies point one way, readable from the import names: ``findata.contracts`` depends on
nothing of ours; settings, clock, control plane and the published-version store (the rest of
``findata/``) on nothing but contracts; ``findata.sources`` (readers, landing), ``findata.demo``
(which writes what the sources read), ``findata.accounts`` and ``findata.webhooks`` on those;
``findata.orchestration`` (Dagster) on the sources; ``findata.api`` on all but the sources and
the demo; ``findata.cli`` is the entry point on top, and nothing imports the API or the command
line."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("contracts", "sources", "demo", "accounts", "webhooks", "orchestration", "api")
BASE = "base"  # findata/: settings, clock, dates, control plane, published-version store
#: what each part may import besides itself
ALLOWED = {
    "contracts": set(),
    BASE: {"contracts"},
    "sources": {"contracts", BASE},
    "demo": {"contracts", BASE, "sources"},
    "accounts": {"contracts", BASE},
    "webhooks": {"contracts", BASE},
    "orchestration": {"contracts", BASE, "sources"},
    "api": {"contracts", BASE, "accounts", "webhooks", "orchestration"},
    "cli": {"contracts", BASE, "sources", "demo", "accounts", "webhooks", "orchestration", "api"},
}
#: Alembic's environment is the one place every part's tables meet (one migration history); it
#: is run by Alembic, never imported by the base
COMPOSITION = ROOT / "findata" / "control_plane" / "migrations" / "env.py"


def _part_of_module(module: str) -> str | None:
    """The part a ``findata.*`` module belongs to (None for other distributions)."""
    names = module.split(".")
    if names[0] != "findata":
        return None
    if len(names) == 1:
        return BASE
    if names[1] in PARTS:
        return names[1]
    return "cli" if names[1] == "cli" else BASE


def _part_of_file(path: Path) -> str:
    top = path.relative_to(ROOT).parts[0]
    if top in PARTS:
        return top
    return "cli" if path.name == "cli.py" else BASE


def _sources() -> list[Path]:
    folders = [ROOT / part for part in PARTS] + [ROOT / "findata"]
    return sorted(p for folder in folders for p in folder.rglob("*.py") if p != COMPOSITION)


def _imports(path: Path) -> list[str]:
    modules = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.append(node.module)
        elif isinstance(node, ast.Import):
            modules.extend(alias.name for alias in node.names)
    return modules


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_one_way(path: Path) -> None:
    part = _part_of_file(path)
    wrong = [
        module
        for module in _imports(path)
        if (target := _part_of_module(module)) not in (None, part) and target not in ALLOWED[part]
    ]
    assert not wrong, f"{part} may not import {wrong}"


def test_no_top_level_names_but_findata() -> None:
    """Every import of our code goes through the one namespace (``from api...`` would only work
    inside the checkout, by accident of the working directory)."""
    ours = set(PARTS) | {"transforms"}
    stray = [
        (str(path.relative_to(ROOT)), module)
        for path in [*_sources(), COMPOSITION, *sorted((ROOT / "tests").rglob("*.py"))]
        for module in _imports(path)
        if module.split(".")[0] in ours
    ]
    assert not stray
