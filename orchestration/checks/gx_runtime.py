"""Great Expectations, imported lazily and run in an in-memory (ephemeral) context.

Importing ``great_expectations`` takes seconds, so nothing imports it at module level: callers ask
:func:`import_gx` inside the function that needs it. The ephemeral context keeps its stores in
memory and writes no project folder; GE's usage statistics are turned off (environment and
context) and its progress bars are silenced.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any


def import_gx() -> ModuleType:
    """Import ``great_expectations`` with its usage statistics off."""
    os.environ["GX_ANALYTICS_ENABLED"] = "false"
    import great_expectations as gx

    return gx


def ephemeral_context() -> Any:
    """A fresh in-memory GE context: no files, no analytics, no progress bars."""
    gx = import_gx()
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.config.analytics_enabled = False
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return context
