"""The MCP tools' result budget: what a tool call returns fits an agent's context.

A call without ``limit`` to a tool whose rows page is answered with as many rows of the page as
fit in the budget's bytes of JSON (the setting ``mcp_result_bytes``, 32 KB by default; at least
one row, so paging always moves on). The cut is made on the answer before it is counted, cached
and enveloped (``AnswerFit`` in ``api/data_requests.py``): the quota counts the rows sent, and
the continuation in ``meta`` (``next_cursor``; ``next_offset`` on offset-paged tools; the change
feed's ``next_cursor``) starts at the first row not sent, so following it fetches every row
exactly once. ``meta`` says whether rows were cut and how to narrow the call. A ``limit`` sets
the page size instead, as on REST; ``fields`` (fewer columns) lets more rows fit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from findata.api.calls import EndpointAnswer, EndpointCall
from findata.api.data_requests import AnswerFit
from findata.api.quotas import entity_ids_of
from findata.api.responses import json_bytes
from findata.contracts.endpoints import EndpointContract

#: what the budget adds to ``meta`` (the tools' output schemas declare them)
BUDGET_META: dict[str, dict[str, str]] = {
    "budget_bytes": {"type": "integer"},
    "cut_to_budget": {"type": "boolean"},
    "next_offset": {"type": "integer"},
    "narrow": {"type": "string"},
}


def pages(contract: EndpointContract) -> bool:
    """Whether the contract's rows come a page at a time (so a result can be cut and go on)."""
    return contract.paging.kind != "none" or contract.paging.row_cursor is not None


def budget_for(
    contract: EndpointContract, arguments: dict[str, Any], size: int
) -> AnswerFit | None:
    """The budget of a call: ``size`` bytes on tools whose rows page, unless ``limit`` sets the
    page size."""
    if contract.kind != "data" or not pages(contract) or "limit" in arguments:
        return None
    return ResultBudget(contract, size)


@dataclass(frozen=True)
class ResultBudget:
    """An ``AnswerFit``: the most rows of the page whose body fits ``size`` bytes."""

    contract: EndpointContract
    size: int

    @property
    def name(self) -> str:
        """The response cache keeps answers cut to this budget apart."""
        return f"mcp-budget-{self.size}"

    def __call__(
        self, call: EndpointCall, answer: EndpointAnswer, body: Callable[[EndpointAnswer], bytes]
    ) -> EndpointAnswer:
        """``answer`` marked with the budget, cut to the longest prefix of its rows that fits."""
        rows = answer.rows
        assert isinstance(rows, list)
        whole = self._marked(call, answer, cut=False)
        if len(rows) <= 1 or len(body(whole)) <= self.size:
            return whole
        # the body grows with the rows kept: the longest prefix that fits, by bisection
        fits, too_many = 1, len(rows)
        while too_many - fits > 1:
            middle = (fits + too_many) // 2
            if len(body(self._cut(call, answer, middle))) <= self.size:
                fits = middle
            else:
                too_many = middle
        return self._cut(call, answer, fits)

    def _cut(self, call: EndpointCall, answer: EndpointAnswer, kept: int) -> EndpointAnswer:
        """The first ``kept`` rows, the rest left to the next page."""
        rows = answer.rows
        assert isinstance(rows, list)
        page = rows[:kept]
        paging = self.contract.paging
        cut = dataclasses.replace(answer, rows=page)
        if paging.kind == "cursor":
            assert call.page is not None
            cut.has_more, cut.next_offset = True, call.page.offset + kept
        elif paging.row_cursor is not None:
            last = page[-1]
            assert isinstance(last, dict)
            cut.meta = {**answer.meta, "next_cursor": last[paging.row_cursor.field]}
            cut.meta["has_more"] = True
        if answer.entity_ids is not None:  # rows serialised already: the entities of those sent
            cut.entity_ids = entity_ids_of(orjson.loads(json_bytes(page)))
        return self._marked(call, cut, cut=True)

    def _marked(self, call: EndpointCall, answer: EndpointAnswer, *, cut: bool) -> EndpointAnswer:
        """``answer`` with the budget in its ``meta``, and how to go on when rows follow."""
        meta = {**answer.meta, "budget_bytes": self.size, "cut_to_budget": cut}
        paging = self.contract.paging
        sent = len(answer.rows)
        if paging.kind == "offset":
            assert call.page is not None
            if answer.total is not None and call.page.offset + sent < answer.total:
                meta["next_offset"] = call.page.offset + sent
        if paging.kind == "cursor":
            more = answer.has_more
        else:
            more = "next_offset" in meta or bool(meta.get("has_more"))
        if more:
            meta["narrow"] = how_to_go_on(self.contract, self.size)
        return dataclasses.replace(answer, meta=meta)


def how_to_go_on(contract: EndpointContract, size: int) -> str:
    """What an agent can do when more rows follow, from the contract's paging and parameters."""
    paging = contract.paging
    if paging.kind == "offset":
        follow = "offset=meta.next_offset"
    elif paging.row_cursor is not None:
        follow = f"{paging.row_cursor.parameter}=meta.next_cursor"
    else:
        follow = "cursor=meta.next_cursor"
    text = f"More rows follow: call again with the same arguments and {follow}."
    smaller = []
    if contract.parameter("fields") is not None:
        smaller.append("fields (only the columns you need)")
    if contract.parameter("start") is not None and contract.parameter("end") is not None:
        smaller.append("start/end (a shorter window)")
    if smaller:
        text += f" Narrow with {' or '.join(smaller)}."
    text += f" Without limit a result is cut to {size} bytes; limit=N sets N rows a page instead"
    return text + (f" (at most {paging.max_limit})." if paging.max_limit else ".")
