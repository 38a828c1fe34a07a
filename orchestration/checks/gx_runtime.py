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
    """A fresh in-memory GE context: no files, no docs site, no analytics, no progress bars.

    GE's default ephemeral configuration points a docs site at a new temporary directory; this
    one has no docs site until
    :func:`findata.orchestration.checks.data_docs.write_data_docs` adds one.
    """
    gx = import_gx()
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False),
    )
    return gx.get_context(mode="ephemeral", project_config=config)
