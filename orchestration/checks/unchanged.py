"""A mart that did not change needs no new check: its rows are those of the current published
version, built by the same code and contracts, and they passed this very contract when that
version was built.

A mart's check is skipped (passed, saying since which version) only when all of these hold: the
run started a build of its own, not forced, after a successful build; the code and contracts
are those of that build (``build_inputs.py``); that build's version is still current and its
file is on disk; and the mart's rows (the contract's columns) have the fingerprints of the
version's parts of the dataset. One scan of the mart fingerprints it part by part
(``compare_with_version``); an incremental mart that keeps which rows its build recomputed
(``rebuilt_rows.py``) is fingerprinted from the version's prints and those rows alone. The same
prints tell a changed mart's check which parts, and which rows of them, to compare
(``changed_rows.py``). Anything else runs the whole check. ``findata contracts check`` always
checks every row of every mart.

Sound because no contract rule can turn on rows that did not change: the rules that read the
day bound dates from above (``max: today``, and days only pass), and the row-count rule compares
with the current version, whose count these rows have.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from findata.contracts.datasets import DatasetContract
from findata.published.parts import (
    part_predicate,
    parts_updated_by_rebuilt_rows,
    read_parts,
    unchanged_parts,
)
from findata.published.publish import table_fingerprint
from findata.published.rebuilt_rows import rebuilt_rows_condition
from findata.published.versions import attach_version, current_catalog, detach_version, open_version


@dataclass(frozen=True)
class VersionComparison:
    """A mart compared with the dataset of the ``comparable_version``: which rows may differ."""

    label: str
    file: Path
    #: the rows to compare, as a SQL condition on the dataset's columns: those of the version's
    #: parts the mart does not hold exactly (a new day: this year's prices), and of those the
    #: rows this run's build recomputed when the mart says which (``rebuilt_rows.py``: the new
    #: day's bars); "true" for every row (a version without parts, whose table differs),
    #: "false" for none
    scope: str
    #: fingerprinted from the version's prints and the rows this run's build recomputed, and
    #: ``scope`` narrowed to those rows (``rebuilt_rows.py``)
    from_rebuilt_rows: bool = False

    @property
    def unchanged(self) -> bool:
        """True when the mart holds exactly the version's rows."""
        return self.scope == _NONE


_NONE, _ALL = "false", "true"


def compare_with_version(
    warehouse: duckdb.DuckDBPyConnection,
    schema: str,
    contract: DatasetContract,
    comparable: tuple[str, Path] | None,
) -> VersionComparison | None:
    """Mart ``<schema>.<contract.name>`` in ``warehouse`` compared with the ``comparable``
    version (``comparable_version``), part by part: from the rows this run's build recomputed
    when the mart keeps which (``rebuilt_rows.py``), else in one scan of the mart; None without
    a comparable version (then every row must be checked)."""
    if comparable is None:
        return None
    label, published = comparable
    with open_version(published) as served:
        parts = read_parts(served, current_catalog(served))
        served_print = table_fingerprint(served, "main", contract) if parts is None else None
    if parts is None:  # a version that holds its tables itself: the whole table is one part
        same = table_fingerprint(warehouse, schema, contract) == served_print
        return VersionComparison(label, published, _NONE if same else _ALL)
    mine = [p for p in parts if p.dataset == contract.name]
    mart = f'"{schema}"."{contract.name}"'
    rebuilt = rebuilt_rows_condition(warehouse, current_catalog(warehouse), schema, contract.name)
    updated = None
    if rebuilt is not None:
        attach_version(warehouse, published, "served")
        try:
            served_rows = f'"served".main."{contract.name}"'
            updated = parts_updated_by_rebuilt_rows(
                warehouse, contract, mart, mine, served_rows, rebuilt
            )
        finally:
            detach_version(warehouse, "served")
    if updated is None:
        same_parts = {p.name for p in unchanged_parts(warehouse, contract, mart, mine)}
    else:
        same_parts = {p.name for p, new in zip(mine, updated, strict=True) if p.file == new.file}
    differing = [f"({part_predicate(contract, p)})" for p in mine if p.name not in same_parts]
    scope = " OR ".join(differing) or _NONE
    if rebuilt is not None and scope != _NONE:
        scope = f"({scope}) AND ({rebuilt})"
    return VersionComparison(label, published, scope, updated is not None)
