"""``/v1/managers``: the 13F filers, all or those a ``search`` finds, by name ignoring case."""

from __future__ import annotations

from sqlglot import exp

from findata.api.calls import EndpointAnswer, EndpointCall, ordered_page
from findata.api.query import Binder, column, order_by

FOLDED = "manager_name_folded"  # the contract's hidden sort column: the name in lower case


def handle(call: EndpointCall) -> EndpointAnswer:
    """A page of managers matching ``search`` (a part of the name, or the CIK digits)."""
    assert call.page is not None
    binder = Binder()
    fields = call.contract.fields.identity
    folded = exp.alias_(exp.Lower(this=column("manager_name")), FOLDED)
    listed = exp.select(*fields, folded).from_("managers")
    search = call.params.get("search")
    if search:
        # a part of the name in any letter case; CONTAINS takes no wildcards, so % and _ are
        # plain characters
        matches: exp.Expression = exp.func(
            "CONTAINS", exp.Lower(this=column("manager_name")), binder(search.lower())
        )
        if search.isdigit():
            matches = exp.or_(matches, column("manager_id").eq(binder(int(search))))
        listed = listed.where(matches)
    query = (
        exp.select(*fields)
        .from_(exp.alias_(listed.subquery(), "listed"))
        .order_by(*order_by(call.contract.order))
    )
    return ordered_page(call, query, binder)
