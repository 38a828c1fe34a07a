"""dagster-dbt, imported without dbt-core in the Dagster process.

dagster-dbt imports dbt-core (~1 s: dbt's adapters, graph and artifact schemas) when it can, for
three things this project does not use in the Dagster process: a dbt adapter opened after each
model (``fetch_row_counts``, ``fetch_column_metadata``), dbt's own selection engine for
``@dbt_assets(select=...)`` (the asset definition here selects every node) and a version check
(``FindataDbtCliResource._cli_version`` reads the installed version instead). Without dbt-core
it runs in the mode it has for a dbt kept in another environment (dbt Fusion, or dbt-core in its
own virtualenv): the same asset specs from the manifest, the same events from dbt's JSON log. dbt
itself runs in its own process (``findata-dbt``, ``warm_dbt.py``), which imports dbt-core as
usual.

Import the names from here, not from ``dagster_dbt``: the first import decides the mode. If
dagster-dbt or dbt-core is already imported (a test that imported it first), the module is the
one already imported, and works as well.
"""

from __future__ import annotations

import importlib.abc
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.machinery import ModuleSpec
from types import ModuleType


class _DbtCoreHidden(importlib.abc.MetaPathFinder):
    """Makes ``import dbt`` fail in one thread: other threads import as usual."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        if threading.get_ident() == self.thread and fullname.split(".")[0] == "dbt":
            raise ModuleNotFoundError(f"{fullname} is not imported in the Dagster process")
        return None


@contextmanager
def _dbt_core_hidden() -> Iterator[None]:
    finder = _DbtCoreHidden()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


with _dbt_core_hidden():
    from dagster_dbt import DagsterDbtTranslator, DbtCliResource, DbtProject, dbt_assets
    from dagster_dbt.asset_utils import get_asset_check_key_for_test

__all__ = [
    "DagsterDbtTranslator",
    "DbtCliResource",
    "DbtProject",
    "dbt_assets",
    "get_asset_check_key_for_test",
]
