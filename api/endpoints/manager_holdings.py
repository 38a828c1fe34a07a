"""``/v1/managers/{manager_id}/holdings``: every 13F position one manager reported.

Whether the id is a manager's is read from the version's manager ids, kept in the row store
(one entry per version), or asked of DuckDB when the store is off."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall
from findata.api.endpoints.holdings import page_of_positions, require_coverage
from findata.api.errors import NotFound
from findata.api.query import column, fetch_dicts_of_sql, slot

#: what a kept manager id costs, about (an int in a frozenset)
MANAGER_ID_BYTES = 80


@dataclass(frozen=True)
class ManagerIds:
    """Every manager id of a version."""

    ids: frozenset[int]
    size: int


def handle(call: EndpointCall) -> EndpointAnswer:
    """The manager's positions (optionally of one quarter); 404 for an id that is no manager."""
    manager_id: int = call.params.get("manager_id")
    require_coverage(call)
    if not _is_manager(call, manager_id):
        raise NotFound(f"No manager with id {manager_id}")
    return page_of_positions(call, {"manager_id": manager_id}, securities=None, of_manager=True)


def _is_manager(call: EndpointCall, manager_id: int) -> bool:
    """Whether the version has a manager ``manager_id``."""
    held = call.row_store.kept(
        (call.version.label, "managers", 0, "ids"), functools.partial(_manager_ids, call)
    )
    if held is not None:
        return manager_id in held.ids
    return bool(fetch_dicts_of_sql(call.data, _known_sql(), {"manager_id": manager_id}))


def _manager_ids(call: EndpointCall) -> ManagerIds:
    """Every manager id of the version, read once."""
    rows = fetch_dicts_of_sql(call.data, "SELECT manager_id FROM managers", {})
    ids = frozenset(row["manager_id"] for row in rows)
    return ManagerIds(ids, MANAGER_ID_BYTES * len(ids))


@functools.cache
def _known_sql() -> str:
    return (
        exp.select("manager_id")
        .from_("managers")
        .where(column("manager_id").eq(slot("manager_id")))
        .sql(dialect="duckdb")
    )
