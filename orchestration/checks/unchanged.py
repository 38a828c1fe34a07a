"""A mart that did not change needs no new check: its rows are those of the current published
version, built by the same code and contracts, and they passed this very contract when that
version was built.

A mart's check is skipped (passed, saying since which version) only when all of these hold: the
run started a build of its own, not forced, after a successful build; the code and contracts
are those of that build (``build_inputs.py``); that build's version is still current and its
file is on disk; and the mart's rows (the contract's columns) have the fingerprint of the
published table. Anything else runs the whole check. ``findata contracts check`` always checks
every row of every mart.

Sound because no contract rule can turn on rows that did not change: the rules that read the
day bound dates from above (``max: today``, and days only pass), and the row-count rule compares
with the current version, whose count these rows have.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from findata.contracts.datasets import DatasetContract
from findata.orchestration.build_inputs import build_before, code_fingerprint
from findata.orchestration.publish import table_fingerprint
from findata.orchestration.published_parts import read_parts, table_print
from findata.published import current_catalog, current_version_at, open_version
from findata.settings import Settings


def comparable_version(settings: Settings, run_id: str) -> tuple[str, Path] | None:
    """The current version (label, file) when run ``run_id``'s marts can be compared with it:
    the run started a build of its own, not forced, after a successful build made by the same
    code and contracts, whose version is still current and on disk. None otherwise."""
    before = build_before(settings, run_id)
    if before is None or before.code != code_fingerprint()[0]:
        return None
    current = current_version_at(settings.control_plane_url)
    if current is None or current.label != before.version:
        return None
    published = settings.published_dir / current.file_name
    return (current.label, published) if published.exists() else None


def unchanged_since(
    warehouse: duckdb.DuckDBPyConnection,
    contract: DatasetContract,
    comparable: tuple[str, Path] | None,
) -> str | None:
    """The label of the ``comparable`` version (``comparable_version``) when mart
    ``contract.name`` in ``warehouse`` holds exactly its rows; None when it must be checked."""
    if comparable is None:
        return None
    label, published = comparable
    with open_version(published) as served:
        parts = read_parts(served, current_catalog(served))
        served_print = (
            table_fingerprint(served, "main", contract)
            if parts is None
            else table_print(contract, [p for p in parts if p.dataset == contract.name])
        )
    return label if table_fingerprint(warehouse, "marts", contract) == served_print else None
