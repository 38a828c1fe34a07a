"""Routes generated from ``contracts/endpoints/*.yaml``: one GET route per contract path.

Every generated route runs the same steps in the spec's order — key (a dependency), parameter
validation (400s), cursor, plan gate (402), checks after the gate, subjects (400/404/409),
the Free history floor — then the endpoint's handler (``api/endpoints/<name>.py``), then the
envelope, paging cursor and headers. The route's signature lists every parameter with its
description and allowed values, so ``/openapi.json`` and ``/docs`` document the contract.
"""

from __future__ import annotations

import datetime as dt
import importlib
import inspect
import re
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from starlette.responses import Response

from accounts.store import KeyOwner
from api.cache import CachedAnswer, ResponseCache, cache_key
from api.calls import EndpointAnswer, EndpointCall, PageWindow
from api.client_notices import notice_headers
from api.deps import optional_key, require_key
from api.envelopes import envelope
from api.errors import ApiError
from api.paging import CursorCodec, CursorState, PaginationLimitReached, request_fingerprint
from api.params import first_values, validate_parameters, validate_path_parameter
from api.published import PublishedData, Version
from api.quotas import Quotas, Ticket, entity_ids_of
from api.responses import json_response
from api.subjects import check_subject_count, parse_tickers, resolve_subjects
from contracts.endpoints import EndpointContract, Parameter, endpoint_names, load_endpoint_contract
from contracts.plans import Plan
from findata.dates import years_before

Handler = Callable[[EndpointCall], EndpointAnswer]

UPGRADE_TEXT = {
    "insiders": "Insider transactions need the Pro plan or higher.",
    "holdings": "Institutional holdings need the Pro plan or higher.",
    "managers": "Manager search and manager holdings need the Pro plan or higher.",
    "changes": "The change feed needs the Max plan or higher.",
    "webhooks": "Webhooks need the Max plan or higher.",
}
#: headers that belong to a cached answer (the rest are counted afresh for each request)
CACHED_HEADERS = ("Cache-Control", "X-Data-Floor")
NO_VERSION = "No data version is published yet; retry after the first refresh."


def contract_router() -> APIRouter:
    """A router with every contract's routes."""
    router = APIRouter()
    for name in endpoint_names():
        contract = load_endpoint_contract(name)
        handler: Handler = importlib.import_module(f"api.endpoints.{name}").handle
        for path in contract.paths:
            router.add_api_route(
                path,
                _route(contract, handler, path),
                methods=["GET"],
                name=f"{name}:{path}",
                summary=contract.summary,
                description=_description(contract),
                response_class=Response,
                tags=[name],
            )
    return router


def _route(contract: EndpointContract, handler: Handler, path: str) -> Callable[..., Response]:
    path_names = re.findall(r"{(\w+)}", path)
    key_dependency = require_key if contract.key == "required" else optional_key

    def route(request: Request, owner: Any, **_documented: Any) -> Response:
        return _answer(contract, handler, request, owner, path)

    parameters = [
        inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Request),
        inspect.Parameter(
            "owner",
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            annotation=Annotated[KeyOwner | None, Depends(key_dependency)],
        ),
    ]
    for name in path_names:
        declared = contract.parameter(name)
        description = declared.description if declared else name
        if contract.subject and name == contract.subject.path_parameter:
            description = "Tickers, comma separated (1 on Free, more on paid plans)."
        parameters.append(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=Annotated[str, Path(description=description)],
            )
        )
    for parameter in contract.all_parameters:
        if parameter.in_path:
            continue
        parameters.append(
            inspect.Parameter(
                parameter.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=None,
                annotation=Annotated[str | None, _documented_query(contract, parameter)],
            )
        )
    route.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    route.__name__ = f"get_{contract.name}"
    return route


def _documented_query(contract: EndpointContract, parameter: Parameter) -> Any:
    """The OpenAPI description of a query parameter (validation is ours, with the spec's texts)."""
    extra: dict[str, Any] = {}
    if parameter.type == "fields":
        extra["x-selectable"] = contract.fields.selectable
    if parameter.type == "limit":
        extra["default"] = contract.paging.default_limit
        extra["x-maximum"] = contract.paging.max_limit
    if parameter.values:
        extra["enum"] = parameter.values
    if parameter.type == "date":
        extra["format"] = "date"
        if parameter.min:
            extra["x-minimum"] = parameter.min.isoformat()
        if parameter.max:
            extra["x-maximum"] = parameter.max.isoformat()
    if parameter.type == "flag":
        extra["enum"] = ["true", "false"]
    if parameter.default is not None:
        extra["default"] = parameter.default
    return Query(description=parameter.description, json_schema_extra=extra or None)


def _description(contract: EndpointContract) -> str:
    lines = [contract.description, "", f"Row order: {contract.order_description}"]
    if contract.paging.kind != "none":
        lines.append(
            f"Paging: {contract.paging.kind}, limit {contract.paging.default_limit} by default, "
            f"at most {contract.paging.max_limit}."
        )
    if contract.capability:
        lines.append(f"Plans: {UPGRADE_TEXT[contract.capability]}")
    return "\n".join(lines)


def _answer(
    contract: EndpointContract,
    handler: Handler,
    request: Request,
    owner: KeyOwner | None,
    path: str,
) -> Response:
    state = request.app.state
    request.state.data_endpoint = True  # errors from here on may carry client notices
    sent = first_values(request.query_params)
    params = validate_parameters(contract, sent, before_plan_check=True)
    fingerprint = request_fingerprint(request.url.path, sent)
    codec: CursorCodec = state.cursors
    cursor_state: CursorState | None = None
    if contract.paging.kind == "cursor" and sent.get("cursor"):
        cursor_state = codec.read(sent["cursor"], fingerprint)

    plan: Plan | None = owner.plan if owner else None
    if contract.capability and (plan is None or not plan.allows(contract.capability)):
        raise ApiError(
            "upgrade_required", f"{UPGRADE_TEXT[contract.capability]} Upgrade to use it."
        )
    params.values.update(validate_parameters(contract, sent, before_plan_check=False).values)
    path_values = dict(request.path_params)
    for name, raw in path_values.items():
        declared = contract.parameter(name)
        if declared is not None and declared.in_path:
            params.values[name] = validate_path_parameter(declared, raw)

    published: PublishedData = state.published
    version = _version(published, cursor_state)
    if cursor_state and plan and cursor_state.page > plan.pages_per_query:
        raise PaginationLimitReached(plan.name, plan.pages_per_query)

    today = state.clock.now().date()
    lease = published.lease(version)  # released when the handler is done, whatever happens
    quotas: Quotas | None = state.quotas
    ticket: Ticket | None = None
    try:
        call = EndpointCall(
            contract=contract,
            params=params,
            owner=owner,
            plan=plan,
            path=path_values,
            data=lease.cursor,
            version=version,
            control_plane=state.engine,
            today=today,
            page=_page(contract, params.get("limit"), params.get("offset"), cursor_state),
            warnings=list(params.warnings),
        )
        if owner is not None and contract.dataset:
            call.change_cursor = published.change_cursor(version)
        if contract.history_floor and plan and plan.history_floor_years:
            call.floor = years_before(today, plan.history_floor_years)
            call.warnings += _floor_warnings(call)
        tickers, entity_ids = _subjects_sent(call)
        if contract.subject:
            check_subject_count(contract.subject, plan, tickers, entity_ids)
        if quotas is not None:
            cost = 1 if contract.counts_per == "request" else max(1, len(tickers or entity_ids))
            ip = request.client.host if request.client else "unknown"
            ticket = quotas.admit(owner, ip, cost)
        cache: ResponseCache = state.cache
        key = cache_key(version.label, _view(plan, today), request.url.path, sent)
        answer = _handled(
            call, handler, quotas, ticket, (tickers, entity_ids), lambda: cache.get(key)
        )
    finally:
        lease.release()
    notices = notice_headers(
        request.headers.get("user-agent"), state.settings.client_latest_version
    )
    if isinstance(answer, CachedAnswer):
        headers = {**answer.headers, "Age": str(answer.age(state.clock.now()))}
        if quotas is not None and ticket is not None:
            counted = quotas.settle(
                ticket, contract.name, 200, answer.rows, answer.entity_ids, cached=True
            )
            headers.update(counted)
        return Response(
            content=answer.body.encode(),
            media_type="application/json",
            headers={**headers, **notices},
        )
    rows = answer.row_count if answer.row_count is not None else len(answer.rows)
    served = entity_ids_of(answer.rows)
    headers: dict[str, str] = {}
    if quotas is not None and ticket is not None:
        headers = quotas.settle(ticket, contract.name, 200, rows, served)
    response = _respond(call, answer, codec, fingerprint, {**headers, **notices})
    if answer.cache_control != "no-store":
        kept = {k: response.headers[k] for k in CACHED_HEADERS if k in response.headers}
        stored_at = state.clock.now().timestamp()
        cache.put(key, CachedAnswer(bytes(response.body).decode(), kept, stored_at, rows, served))
    return response


def _view(plan: Plan | None, today: dt.date) -> str:
    """What shapes an answer besides the request: the plan (keyless: restricted bodies) and the
    UTC day (Free's floor moves with it)."""
    return f"{plan.code if plan else 'keyless'}:{today.isoformat()}"


def _handled(
    call: EndpointCall,
    handler: Handler,
    quotas: Quotas | None,
    ticket: Ticket | None,
    subjects: tuple[list[str], list[int]],
    cached: Callable[[], CachedAnswer | None],
) -> EndpointAnswer | CachedAnswer:
    """The cached answer, else the handler's. An error after admission keeps the reservation
    when the spec counts it (404, 409, 5xx: with the quota headers on 404 and 409) and gives it
    back when the request is refused (400, 402, 429)."""
    try:
        as_of = call.params.get("as_of")
        if quotas and call.owner and as_of and call.contract.index_as_of_allowance:
            quotas.admit_index_as_of(call.owner, as_of)
        hit = cached()
        if hit is not None:
            return hit
        if call.contract.subject:
            _resolve(call, *subjects)
        return handler(call)
    except ApiError as error:
        if quotas is not None and ticket is not None:
            if error.status in (404, 409):
                error.headers.update(quotas.settle(ticket, call.contract.name, error.status, 0, []))
            elif error.status >= 500:
                quotas.settle(ticket, call.contract.name, error.status, 0, [])
            else:
                quotas.give_back(ticket)
        raise
    except Exception:
        if quotas is not None and ticket is not None:
            quotas.settle(ticket, call.contract.name, 500, 0, [])
        raise


def _version(published: PublishedData, cursor_state: CursorState | None) -> Version:
    from api.paging import VERSION_GONE

    if cursor_state is not None:
        version = published.by_label(cursor_state.version)
        if version is None:
            raise ApiError("bad_request", VERSION_GONE)
        return version
    version = published.current()
    if version is None:
        raise ApiError("internal_error", NO_VERSION)
    return version


def _page(
    contract: EndpointContract,
    limit: int | None,
    offset: int | None,
    cursor_state: CursorState | None,
) -> PageWindow | None:
    paging = contract.paging
    if paging.kind == "none":
        return None
    assert paging.default_limit and paging.max_limit
    size = limit or paging.default_limit
    if paging.kind == "offset":
        if size > paging.max_limit:
            raise ApiError("bad_request", f"limit max is {paging.max_limit}")
        return PageWindow(offset=offset or 0, limit=size, number=1)
    size = min(size, paging.max_limit)  # cursor endpoints lower an oversized limit
    if cursor_state is None:
        return PageWindow(offset=0, limit=size, number=1)
    return PageWindow(offset=cursor_state.offset, limit=size, number=cursor_state.page)


def _floor_warnings(call: EndpointCall) -> list[str]:
    """Request rule 7: the Free floor's notice, saying when no row can be returned."""
    assert call.floor is not None
    start, end = call.params.get("start"), call.params.get("end")
    notice = f"Free plan history starts at {call.floor.isoformat()} (one year before today, UTC)"
    if end is not None and end < call.floor:
        return [
            f"{notice}; the requested window ends before it, so there are no rows. "
            "Upgrade to Pro for full history."
        ]
    if start is None or start < call.floor:
        return [f"{notice}; rows before it are not returned. Upgrade to Pro for full history."]
    return []


def _subjects_sent(call: EndpointCall) -> tuple[list[str], list[int]]:
    """The tickers of the path (any ``{ticker}`` path) and the ``entity_id`` values."""
    raw = call.path.get("tickers") or call.path.get("ticker")
    return parse_tickers(raw), call.params.get("entity_id") or []


def _resolve(call: EndpointCall, tickers: list[str], entity_ids: list[int]) -> None:
    subject = call.contract.subject
    assert subject is not None
    # the date the tickers are read on: the end of the window, or the point in time asked for
    on = next(
        (call.params.get(n) for n in ("end", "as_of", "date", "quarter") if call.params.get(n)),
        None,
    )
    on = min(on, call.today) if on else call.today
    call.subject_date = on
    call.subjects = resolve_subjects(call.data, subject, tickers, entity_ids, on)
    call.warnings += call.subjects.warnings


def _respond(
    call: EndpointCall,
    answer: EndpointAnswer,
    codec: CursorCodec,
    fingerprint: str,
    headers: dict[str, str],
) -> Response:
    next_cursor = None
    if answer.has_more and call.contract.paging.kind == "cursor" and call.page:
        assert answer.next_offset is not None
        next_cursor = codec.issue(
            fingerprint,
            CursorState(call.version.label, answer.next_offset, call.page.number + 1),
        )
    body = envelope(call, answer, next_cursor)
    headers = {**headers, "Cache-Control": answer.cache_control}
    if call.floor is not None:
        headers["X-Data-Floor"] = call.floor.isoformat()
    return json_response(body, headers=headers)
