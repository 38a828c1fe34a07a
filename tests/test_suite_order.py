"""The suite's own order: every module ``SLOW_MODULES_FIRST`` names exists (a renamed module
would silently fall back to xdist's order), and a collection puts them first, longest first."""

from __future__ import annotations

from pathlib import Path

from conftest import SLOW_MODULES_FIRST, pytest_collection_modifyitems

TESTS = Path(__file__).parent


def test_every_slow_module_listed_exists() -> None:
    missing = [module for module in SLOW_MODULES_FIRST if not (TESTS / module).is_file()]
    assert missing == []


def test_slow_modules_are_collected_first_in_their_order() -> None:
    class Item:  # what the hook reads of an item: its path
        def __init__(self, module: str) -> None:
            self.path = TESTS / module

    modules = ["accounts/test_store.py", *reversed(SLOW_MODULES_FIRST[:3]), "api/test_auth.py"]
    items = [Item(module) for module in modules]
    pytest_collection_modifyitems(items)  # type: ignore[arg-type]
    assert [item.path.relative_to(TESTS).as_posix() for item in items] == [
        *SLOW_MODULES_FIRST[:3],
        "accounts/test_store.py",
        "api/test_auth.py",
    ]
