"""``/v1/holdings``: 13F positions in the securities of the companies the request names.

Also the shared pieces of the holdings endpoints (``manager_holdings`` uses them): the coverage
check behind the spec's 503 and the page query over ``institutional_holdings``, whose SQL is
built once per shape of request (number of securities, whether of one manager, of one quarter,
superseded reports or not): building it with sqlglot cost more than DuckDB's query. One
security's positions, and one manager's, are answered from its positions kept serialised in
memory (``api/memory_pages.py``), loaded with that same SQL less the page, once per version,
shape and quarter.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall, ordered_page_of_sql, paged
from findata.api.errors import ApiError
from findata.api.memory_pages import page_from_memory
from findata.api.query import column, fetch_dicts_of_sql, order_by, slot
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
    shape = Shape(
        fields=tuple(call.contract.fields.identity),
        securities=securities,
        of_manager=of_manager,
        of_quarter=quarter is not None,
        include_superseded=bool(call.params.get("include_superseded")),
        order=tuple(call.contract.order),
    )
    if quarter is not None:
        values = {**values, "quarter": quarter}
    held_by = _held_by(call, shape)
    if held_by is not None:
        # one security's (or one manager's) every position of this shape and quarter (every
        # quarter when none is asked): an entry per quarter keeps a large holder's bounded
        load = functools.partial(_positions_of, call, shape, held_by, quarter)
        answer = page_from_memory(
            call,
            f"{HOLDINGS}/{held_by}",
            (shape, quarter),
            [values[held_by]],
            load,
            (None, None),
            date_field="report_date",
            newest_first=True,
        )
        if answer is not None:
            return answer
    return ordered_page_of_sql(call, _positions_sql(shape), values)


@dataclass(frozen=True)
class Shape:
    """What the SQL of a page of positions depends on (its values are bound per request)."""

    fields: tuple[str, ...]
    #: in the securities of this many ``security_<n>`` slots (None: in any)
    securities: int | None
    #: of the manager of the ``manager_id`` slot
    of_manager: bool
    of_quarter: bool
    include_superseded: bool
    order: tuple[OrderTerm, ...]


def _held_by(call: EndpointCall, shape: Shape) -> str | None:
    """The slot naming the one entity whose positions the row store answers this request from
    (``security_0``: one security's, ``manager_id``: one manager's, of every security), or
    None when DuckDB is asked (the store off; several securities; a security's positions of one
    manager). Both endpoints order positions newest quarter first."""
    if not call.row_store.enabled or not (
        shape.order[0].column == "report_date" and shape.order[0].descending
    ):
        return None
    if shape.securities == 1 and not shape.of_manager:
        return "security_0"
    if shape.securities is None and shape.of_manager:
        return "manager_id"
    return None


def _positions_of(
    call: EndpointCall,
    positions: Shape,
    slot_name: str,
    quarter: dt.date | None,
    entity_id: int,
) -> list[dict[str, Any]]:
    """Every position of one security or one manager (``slot_name``) of the ``positions``
    shape (of ``quarter``, when one is asked) in the contract's order: what the row store
    keeps."""
    values: dict[str, Any] = {slot_name: entity_id}
    if quarter is not None:
        values["quarter"] = quarter
    return fetch_dicts_of_sql(call.data, _unpaged_sql(positions), values)


@functools.lru_cache(maxsize=256)
def _positions_sql(shape: Shape) -> str:
    """The SQL of one page of positions of a request of ``shape``, built once."""
    return paged(_ordered_query(shape))


@functools.lru_cache(maxsize=64)
def _unpaged_sql(shape: Shape) -> str:
    """The SQL of every position of a request of ``shape``, built once."""
    return _ordered_query(shape).sql(dialect="duckdb")


def _ordered_query(shape: Shape) -> exp.Select:
    """The positions of a request of ``shape`` in the contract's order."""
    conditions: list[exp.Expression] = []
    if shape.securities is not None:
        slots = [slot(f"security_{n}") for n in range(shape.securities)]
        conditions.append(column("entity_id", "h").isin(*slots) if slots else exp.false())
    if shape.of_manager:
        conditions.append(column("manager_id", "h").eq(slot("manager_id")))
    if shape.of_quarter:
        conditions.append(column("report_date", "h").eq(slot("quarter")))
    if not shape.include_superseded:
        conditions.append(column("is_current", "h"))
    selected = [
        exp.alias_(column("manager_name", "m"), "manager_name")
        if name == "manager_name"
        else column(name, "h")
        for name in shape.fields
    ]
    return (
        exp.select(*selected)
        .from_(exp.alias_(exp.to_table(HOLDINGS), "h"))
        .join("managers AS m", on="m.manager_id = h.manager_id", join_type="left")
        .where(*conditions)
        .order_by(*order_by(shape.order, "h"))
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
