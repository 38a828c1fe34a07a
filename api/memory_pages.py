"""A cursor page answered from the row store (``api/row_store.py``) instead of DuckDB.

An endpoint whose rows, for one entity, come in a contract order that leads with a date (prices:
a security's bars oldest first; insiders: a company's lines newest first; holdings: a security's
or a manager's positions newest quarter first) can answer a window of dates from the entity's
rows held in memory: the same SQL the endpoint would run, without the window and the page, is
run once per version, entity and row shape (``load``), and each request slices it. Several
entities' rows are concatenated in the order given, so that is the answer's order only when the
contract orders by entity first (prices) or there is one entity. The answers are the SQL path's
byte for byte (``tests/api/test_served_copy_answers.py`` and the row store's own tests).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Hashable
from typing import Any

import orjson

from findata.api.calls import EndpointAnswer, EndpointCall, page_answer
from findata.api.row_store import EntityRows


def page_from_memory(
    call: EndpointCall,
    dataset: str,
    shape: Hashable,
    entity_ids: list[int],
    load: Callable[[int], list[dict[str, Any]]],
    window: tuple[dt.date | None, dt.date | None],
    *,
    date_field: str,
    newest_first: bool = False,
) -> EndpointAnswer | None:
    """The page of the rows of ``entity_ids`` (in that order) dated within ``window`` (both
    ends inclusive, None: unbounded). ``load(entity_id)`` returns every row of one entity of
    this ``shape`` in the contract's order; ``dataset`` and ``shape`` name its store entry.
    None when an entity's rows are too large for the store: the caller asks DuckDB."""
    assert call.page is not None
    keys = [(call.version.label, dataset, entity_id, shape) for entity_id in entity_ids]
    if any(call.row_store.too_large(key) for key in keys):
        return None
    rows: list[orjson.Fragment] = []
    served: set[int] = set()
    first, last = call.page.offset, call.page.offset + call.page.limit  # this page's positions
    for key, entity_id in zip(keys, entity_ids, strict=True):
        held = call.row_store.entity_rows(
            key, functools.partial(_entry, load, entity_id, date_field, newest_first)
        )
        dated = held.window(*window)
        # the part of this entity's rows that falls on the page
        on_page = dated[max(first - len(rows), 0) : max(last - len(rows), 0)]
        served |= held.entities_at(on_page)
        rows += held.rows[dated.start : dated.stop]
        if len(rows) > last:
            break  # one row past the page is all the paging needs
    page, following = rows[first:last], rows[last] if len(rows) > last else None
    answer = page_answer(call, page, following)
    answer.entity_ids = sorted(served)
    return answer


def _entry(
    load: Callable[[int], list[dict[str, Any]]],
    entity_id: int,
    date_field: str,
    newest_first: bool,
) -> EntityRows:
    """One entity's rows as the store keeps them."""
    return EntityRows.of(load(entity_id), date_field, newest_first=newest_first)
