"""Response bodies as the spec's "Response envelope" describes them, per envelope kind."""

from __future__ import annotations

from typing import Any

from findata.api.calls import EndpointAnswer, EndpointCall
from findata.contracts.endpoints import EndpointContract


def carries_change_cursor(contract: EndpointContract) -> bool:
    """Whether a keyed 200 of the endpoint has ``meta.change_cursor``: it reads a dataset (the
    change feed names its changes) and is no resolve answer."""
    return contract.dataset is not None and contract.envelope != "resolve"


def envelope(call: EndpointCall, answer: EndpointAnswer, next_cursor: str | None) -> dict:
    """The body of a 200 answer."""
    kind = call.contract.envelope
    warnings = [*call.warnings, *answer.warnings]
    if kind == "resolve":
        body: dict[str, Any] = {**answer.top, "data": answer.rows, "meta": answer.meta}
    elif kind == "counted":
        body = _counted(call, answer, next_cursor)
    else:
        body = {"data": answer.rows, "meta": _data_meta(call, answer, next_cursor)}
    if call.change_cursor is not None:
        # where this data's reader starts the change feed (spec: "Response envelope")
        body["meta"]["change_cursor"] = call.change_cursor
    if warnings:
        body["warnings"] = list(dict.fromkeys(warnings))
    return body


def _subject_meta(call: EndpointCall) -> dict[str, Any]:
    subjects = call.subjects
    if subjects is None:
        return {}
    meta: dict[str, Any] = {}
    tickers = list(subjects.resolved) + list(subjects.ambiguous) + list(subjects.unmatched)
    tickers += list(subjects.unlisted)
    if call.params.get("entity_id"):
        meta["entity_ids_requested"] = call.params.get("entity_id")
    else:
        meta["tickers_requested"] = [t for t in _path_tickers(call) if t in tickers]
        meta["tickers_resolved"] = {
            ticker: ids[0] if len(ids) == 1 else ids for ticker, ids in subjects.resolved.items()
        }
    if subjects.ambiguous:
        meta["tickers_ambiguous"] = subjects.ambiguous
    return meta


def _path_tickers(call: EndpointCall) -> list[str]:
    from findata.api.subjects import parse_tickers

    subject = call.contract.subject
    assert subject is not None
    return parse_tickers(call.path.get(subject.path_parameter or ""))


def _data_meta(
    call: EndpointCall, answer: EndpointAnswer, next_cursor: str | None
) -> dict[str, Any]:
    rows = answer.rows
    count = len(rows)
    meta: dict[str, Any] = _subject_meta(call)
    if call.contract.dataset:
        meta["data_through"] = call.version.data_through.get(call.contract.dataset)
    meta.update(answer.meta)
    meta["count"] = count
    paging = call.contract.paging
    if paging.kind == "cursor" and call.page:
        if paging.limit_in_meta:
            meta["limit"] = call.page.limit
        meta["has_more"] = answer.has_more
        meta["next_cursor"] = next_cursor
    elif paging.kind == "offset" and call.page:
        meta["limit"] = call.page.limit
        meta["offset"] = call.page.offset
        meta["total"] = answer.total
        meta["has_more"] = answer.total is not None and call.page.offset + count < answer.total
    return meta


def _counted(call: EndpointCall, answer: EndpointAnswer, next_cursor: str | None) -> dict:
    rows = answer.rows
    body: dict[str, Any] = {"data": rows, "count": len(rows), "next_cursor": next_cursor}
    body.update(answer.top)
    meta: dict[str, Any] = {"has_more": answer.has_more, "next_cursor": next_cursor}
    meta.update(answer.meta)
    body["meta"] = meta
    return body
