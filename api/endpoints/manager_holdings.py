"""``/v1/managers/{manager_id}/holdings``: every 13F position one manager reported."""

from __future__ import annotations

from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall
from findata.api.endpoints.holdings import page_of_positions, require_coverage
from findata.api.errors import NotFound
from findata.api.query import Binder, column, fetch_all


def handle(call: EndpointCall) -> EndpointAnswer:
    """The manager's positions (optionally of one quarter); 404 for an id that is no manager."""
    manager_id: int = call.params.get("manager_id")
    require_coverage(call)
    binder = Binder()
    known = (
        exp.select("manager_id")
        .from_("managers")
        .where(column("manager_id").eq(binder(manager_id)))
    )
    if not fetch_all(call.data, known, binder):
        raise NotFound(f"No manager with id {manager_id}")
    binder = Binder()
    return page_of_positions(call, binder, [column("manager_id", "h").eq(binder(manager_id))])
