"""``/v1/holdings``: 13F positions in the securities of the companies the request names.

Also the shared pieces of the holdings endpoints (``manager_holdings`` uses them): the coverage
check behind the spec's 503 and the page query over ``institutional_holdings``.
"""

from __future__ import annotations

from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall, ordered_page
from findata.api.errors import ApiError
from findata.api.query import Binder, column, fetch_all, order_by

HOLDINGS = "institutional_holdings"


def handle(call: EndpointCall) -> EndpointAnswer:
    """Positions in the resolved securities, optionally of one quarter and one manager."""
    assert call.subjects is not None
    require_coverage(call)
    binder = Binder()
    securities = _securities(call)
    conditions: list[exp.Expression] = [
        column("entity_id", "h").isin(*binder.each(securities)) if securities else exp.false()
    ]
    if call.params.get("manager_id") is not None:
        conditions.append(column("manager_id", "h").eq(binder(call.params.get("manager_id"))))
    return page_of_positions(call, binder, conditions)


def require_coverage(call: EndpointCall) -> None:
    """503 ``coverage_unavailable`` when the served version holds no holdings table (a version
    published without the dataset): the holdings endpoints cannot say anything then."""
    binder = Binder()
    query = (
        exp.select("table_name")
        .from_("information_schema.tables")
        .where(column("table_name").eq(binder(HOLDINGS)))
    )
    if not fetch_all(call.data, query, binder):
        raise ApiError("coverage_unavailable")


def page_of_positions(
    call: EndpointCall, binder: Binder, conditions: list[exp.Expression]
) -> EndpointAnswer:
    """One page of the positions meeting ``conditions`` (and ``quarter``), in contract order,
    each row labelled with its manager's name; only the managers' current reports unless
    ``include_superseded``."""
    assert call.page is not None
    if call.params.get("quarter") is not None:
        conditions = [
            *conditions,
            column("report_date", "h").eq(binder(call.params.get("quarter"))),
        ]
    if not call.params.get("include_superseded"):
        conditions = [*conditions, column("is_current", "h")]
    selected = [
        exp.alias_(column("manager_name", "m"), "manager_name")
        if name == "manager_name"
        else column(name, "h")
        for name in call.contract.fields.identity
    ]
    query = (
        exp.select(*selected)
        .from_(exp.alias_(exp.to_table(HOLDINGS), "h"))
        .join("managers AS m", on="m.manager_id = h.manager_id", join_type="left")
        .where(*conditions)
        .order_by(*order_by(call.contract.order, "h"))
    )
    return ordered_page(call, query, binder)


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
    if whole_companies:
        binder = Binder()
        query = (
            exp.select("entity_id")
            .from_("entities")
            .where(column("issuer_entity_id").isin(*binder.each(sorted(whole_companies))))
            .where(column("entity_grain").eq(binder("security")))
        )
        chosen.update(row[0] for row in fetch_all(call.data, query, binder))
    return sorted(chosen)
