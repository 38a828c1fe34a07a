"""``/v1/managers/{manager_id}/holdings``: every 13F position one manager reported."""

from __future__ import annotations

import functools

from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall
from findata.api.endpoints.holdings import page_of_positions, require_coverage
from findata.api.errors import NotFound
from findata.api.query import column, fetch_dicts_of_sql, slot


def handle(call: EndpointCall) -> EndpointAnswer:
    """The manager's positions (optionally of one quarter); 404 for an id that is no manager."""
    manager_id: int = call.params.get("manager_id")
    require_coverage(call)
    if not fetch_dicts_of_sql(call.data, _known_sql(), {"manager_id": manager_id}):
        raise NotFound(f"No manager with id {manager_id}")
    return page_of_positions(call, {"manager_id": manager_id}, securities=None, of_manager=True)


@functools.cache
def _known_sql() -> str:
    return (
        exp.select("manager_id")
        .from_("managers")
        .where(column("manager_id").eq(slot("manager_id")))
        .sql(dialect="duckdb")
    )
