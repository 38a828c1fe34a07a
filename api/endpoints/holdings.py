"""``/v1/holdings``: 13F positions in the securities of the companies the request names.

Also the shared pieces of the holdings endpoints (``manager_holdings`` uses them): the coverage
check behind the spec's 503 and the page query over ``institutional_holdings``, whose SQL is
built once per shape of request (number of securities, whether of one manager, of one quarter,
superseded reports or not): building it with sqlglot cost more than DuckDB's query.
"""

from __future__ import annotations

import functools
from typing import Any

from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall, ordered_page_of_sql, paged
from findata.api.errors import ApiError
from findata.api.query import column, order_by, slot
from findata.contracts.endpoints import OrderTerm

HOLDINGS = "institutional_holdings"


def handle(call: EndpointCall) -> EndpointAnswer:
    """Positions in the resolved securities, optionally of one quarter and one manager."""
    assert call.subjects is not None
    require_coverage(call)
    securities = _securities(call)
    values: dict[str, Any] = {f"security_{n}": entity for n, entity in enumerate(securities)}
    manager_id = call.params.get("manager_id")
    if manager_id is not None:
        values["manager_id"] = manager_id
    return page_of_positions(
        call, values, securities=len(securities), of_manager=manager_id is not None
    )


def require_coverage(call: EndpointCall) -> None:
    """503 ``coverage_unavailable`` when the served version holds no holdings table (a version
    published without the dataset): the holdings endpoints cannot say anything then."""
    if HOLDINGS not in call.lease.datasets:
        raise ApiError("coverage_unavailable")


def page_of_positions(
    call: EndpointCall, values: dict[str, Any], *, securities: int | None, of_manager: bool
) -> EndpointAnswer:
    """One page of positions (``securities``: in the securities of the ``security_<n>`` slots,
    None: in any; ``of_manager``: of the manager of the ``manager_id`` slot) and of ``quarter``,
    in contract order, each row labelled with its manager's name; only the managers' current
    reports unless ``include_superseded``."""
    quarter = call.params.get("quarter")
    if quarter is not None:
        values = {**values, "quarter": quarter}
    sql = _positions_sql(
        tuple(call.contract.fields.identity),
        securities,
        of_manager,
        quarter is not None,
        bool(call.params.get("include_superseded")),
        tuple(call.contract.order),
    )
    return ordered_page_of_sql(call, sql, values)


@functools.lru_cache(maxsize=256)
def _positions_sql(
    fields: tuple[str, ...],
    securities: int | None,
    of_manager: bool,
    of_quarter: bool,
    include_superseded: bool,
    order: tuple[OrderTerm, ...],
) -> str:
    """The SQL of one page of positions of a request of this shape, built once."""
    conditions: list[exp.Expression] = []
    if securities is not None:
        slots = [slot(f"security_{n}") for n in range(securities)]
        conditions.append(column("entity_id", "h").isin(*slots) if slots else exp.false())
    if of_manager:
        conditions.append(column("manager_id", "h").eq(slot("manager_id")))
    if of_quarter:
        conditions.append(column("report_date", "h").eq(slot("quarter")))
    if not include_superseded:
        conditions.append(column("is_current", "h"))
    selected = [
        exp.alias_(column("manager_name", "m"), "manager_name")
        if name == "manager_name"
        else column(name, "h")
        for name in fields
    ]
    return paged(
        exp.select(*selected)
        .from_(exp.alias_(exp.to_table(HOLDINGS), "h"))
        .join("managers AS m", on="m.manager_id = h.manager_id", join_type="left")
        .where(*conditions)
        .order_by(*order_by(order, "h"))
    )


def _securities(call: EndpointCall) -> list[int]:
    """The securities served: those a ticker (or security entity_id) named; every security of
    the company for an issuer entity_id."""
    assert call.subjects is not None
    chosen: set[int] = set()
    whole_companies: set[int] = set()
    for name, issuers in call.subjects.resolved.items():
        if name in call.subjects.securities:
            chosen.update(call.subjects.securities[name])
        else:
            whole_companies.update(issuers)
    chosen.update(call.directory.securities_of(whole_companies))
    return sorted(chosen)
