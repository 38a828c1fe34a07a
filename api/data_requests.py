"""Answering a data request in the spec's order, as named steps any front end reuses.

The REST routes (``api/generate.py``) and the MCP tools each turn what they receive into a
``DataRequest`` (after reading the key: ``api/auth.py``) and call :func:`answer_data_request`:

1. parameters checked before the plan check (400s; request rule 6), then the cursor;
2. the plan check (402), then the checks after it (the manager id of a path);
3. the version to read (a cursor's own) and the plan's pages per query;
4. the Free history floor (rule 7), the tickers per request, the quota (429);
5. the cached answer, or the subjects resolved (404/409) and the endpoint's handler, within
   the request's time limits (504: ``api/time_limits.py``);
6. the answer fitted to the front end's bound, if it sets one (``AnswerFit``: the MCP
   tools' result budget), the envelope with its next cursor, and the headers (quota, cache,
   client notices).

An error at any step is an ``ApiError``; the front end renders it (the quota reservation is
settled or given back here, as the spec counts it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import sqlalchemy as sa

from findata.accounts.counters import UsageCounters
from findata.accounts.store import KeyOwner
from findata.api.auth import KeyCheck
from findata.api.cache import CachedAnswer, ResponseCache, cache_key
from findata.api.calls import EndpointAnswer, EndpointCall, PageWindow, endpoint_handle
from findata.api.client_notices import notice_headers
from findata.api.envelopes import carries_change_cursor, envelope
from findata.api.errors import ApiError
from findata.api.paging import (
    VERSION_GONE,
    CursorCodec,
    CursorState,
    PaginationLimitReached,
    request_fingerprint,
)
from findata.api.params import (
    RequestParams,
    first_values,
    validate_parameters,
    validate_path_parameter,
)
from findata.api.prometheus import ApiMetrics
from findata.api.published import Lease, PublishedData, Version
from findata.api.quotas import Quotas, Ticket, entity_ids_of
from findata.api.responses import json_bytes
from findata.api.subjects import check_subject_count, parse_tickers, resolve_subjects
from findata.api.time_limits import check_request_time, request_time_limit
from findata.clock import Clock
from findata.contracts.endpoints import EndpointContract
from findata.contracts.plans import Plan
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


@dataclass(frozen=True)
class Serving:
    """The parts of the app a data request uses (``create_app`` builds them once)."""

    published: PublishedData
    cursors: CursorCodec
    cache: ResponseCache
    quotas: Quotas | None
    clock: Clock
    control_plane: sa.Engine
    counters: UsageCounters
    client_latest_version: str
    request_timeout_seconds: float = 30.0
    query_timeout_seconds: float = 10.0
    metrics: ApiMetrics | None = None  # response-cache hits and misses


class AnswerFit(Protocol):
    """A front end's bound on a fresh answer (the MCP tools' result budget), applied before the
    answer is counted, cached and enveloped: the quota counts the rows sent, and the next page
    starts where the fitted one ends."""

    @property
    def name(self) -> str:
        """Part of the response cache's key: answers fitted otherwise never stand for each
        other."""
        ...

    def __call__(
        self, call: EndpointCall, answer: EndpointAnswer, body: Callable[[EndpointAnswer], bytes]
    ) -> EndpointAnswer:
        """``answer`` fitted; ``body`` renders an answer as the JSON body it would be sent as."""
        ...


@dataclass(frozen=True)
class DataRequest:
    """One data request as a front end received it, its key already read."""

    contract: EndpointContract
    path: str  # the contract's path template, e.g. ``/v1/prices/{tickers}``
    url_path: str  # the path as requested (with the cursor's other parameters, its fingerprint)
    path_values: dict[str, str]
    sent: dict[str, str]  # the first value of each query parameter
    owner: KeyOwner | None
    client_ip: str
    user_agent: str | None = None
    fit: AnswerFit | None = None
    #: the newest published version's id, read with the key (None: read it when needed)
    newest_version_id: int | None = None

    @property
    def plan(self) -> Plan | None:
        """The key's plan (None when keyless)."""
        return self.owner.plan if self.owner else None

    def fingerprint(self) -> str:
        """What a cursor of this request is bound to: the path and every parameter but
        ``limit`` and ``cursor``."""
        return request_fingerprint(self.url_path, self.sent)

    @classmethod
    def of(
        cls,
        contract: EndpointContract,
        path: str,
        url_path: str,
        path_values: dict[str, str],
        query: Any,
        key: KeyCheck,
        client_ip: str,
        user_agent: str | None,
    ) -> DataRequest:
        """A request from a multi-valued ``query`` (the first value of each name counts)."""
        return cls(
            contract,
            path,
            url_path,
            path_values,
            first_values(query),
            key.owner,
            client_ip,
            user_agent,
            newest_version_id=key.newest_version_id,
        )


@dataclass(frozen=True)
class DataResponse:
    """A 200 answer: the JSON body and every header."""

    body: bytes
    headers: dict[str, str]


def handler_for(contract: EndpointContract) -> Handler:
    """The endpoint's handler: ``handle`` of ``api/endpoints/<contract name>.py``."""
    return endpoint_handle(contract.name)


def answer_data_request(serving: Serving, request: DataRequest) -> DataResponse:
    """The answer to ``request``, every step in the spec's order (see the module's docstring),
    within the request's time limits (``api/time_limits.py``)."""
    with request_time_limit(serving.request_timeout_seconds, serving.query_timeout_seconds):
        return answer_within_time_limit(serving, request)


def answer_within_time_limit(serving: Serving, request: DataRequest) -> DataResponse:
    """``answer_data_request``'s steps."""
    params = check_parameters_before_plan(request)
    cursor = read_cursor(serving.cursors, request)
    check_plan(request.contract, request.plan)
    check_parameters_after_plan(request, params)
    version = version_to_read(serving.published, cursor, request.newest_version_id)
    check_pages_per_query(cursor, request.plan)
    lease = serving.published.lease(version)  # released when the handler is done, whatever
    try:
        call = endpoint_call(serving, request, params, version, lease, cursor)
        apply_history_floor(call)
        subjects = subjects_sent(call)
        check_tickers_per_request(call, subjects)
        ticket = admit_to_quota(serving.quotas, request, subjects)
        key = answer_cache_key(call, request)
        answer = cached_or_handled(serving, call, request, ticket, subjects, key)
    finally:
        lease.release()
    return respond(serving, call, request, answer, ticket, key)


def check_parameters_before_plan(request: DataRequest) -> RequestParams:
    """Request rule 6: the 400 checks every plan gets before the plan check."""
    return validate_parameters(request.contract, request.sent, before_plan_check=True)


def read_cursor(codec: CursorCodec, request: DataRequest) -> CursorState | None:
    """The page a ``cursor`` asks for (an empty cursor asks for the first page); a cursor not
    issued for this very request is a 400."""
    if request.contract.paging.kind != "cursor" or not request.sent.get("cursor"):
        return None
    return codec.read(request.sent["cursor"], request.fingerprint())


def check_plan(contract: EndpointContract, plan: Plan | None) -> None:
    """The plan check: an endpoint the plan does not include is a 402."""
    if contract.capability and (plan is None or not plan.allows(contract.capability)):
        raise ApiError(
            "upgrade_required", f"{UPGRADE_TEXT[contract.capability]} Upgrade to use it."
        )


def check_parameters_after_plan(request: DataRequest, params: RequestParams) -> None:
    """The checks that follow the 402 (the manager id in the manager holdings path), added to
    ``params``."""
    params.values.update(
        validate_parameters(request.contract, request.sent, before_plan_check=False).values
    )
    for name, raw in request.path_values.items():
        declared = request.contract.parameter(name)
        if declared is not None and declared.in_path:
            params.values[name] = validate_path_parameter(declared, raw)


def version_to_read(
    published: PublishedData, cursor: CursorState | None, newest_id: int | None
) -> Version:
    """The version a cursor was issued on (a 400 once it is gone), else the current one
    (``newest_id``: the newest version's id as this request read it with its key)."""
    if cursor is not None:
        version = published.by_label(cursor.version)
        if version is None:
            raise ApiError("bad_request", VERSION_GONE)
        return version
    version = published.current(newest_id)
    if version is None:
        raise ApiError("internal_error", NO_VERSION)
    return version


def check_pages_per_query(cursor: CursorState | None, plan: Plan | None) -> None:
    """Limits: a cursor past the plan's pages per query is refused."""
    if cursor and plan and cursor.page > plan.pages_per_query:
        raise PaginationLimitReached(plan.name, plan.pages_per_query)


def endpoint_call(
    serving: Serving,
    request: DataRequest,
    params: RequestParams,
    version: Version,
    lease: Lease,
    cursor: CursorState | None,
) -> EndpointCall:
    """What the handler gets: the validated parameters, the version's data and the page."""
    call = EndpointCall(
        contract=request.contract,
        params=params,
        owner=request.owner,
        plan=request.plan,
        path=dict(request.path_values),
        lease=lease,
        directory=lease.directory,
        row_store=serving.published.row_store,
        version=version,
        control_plane=serving.control_plane,
        today=serving.clock.now().date(),
        page=page_window(request.contract, params.get("limit"), params.get("offset"), cursor),
        warnings=list(params.warnings),
    )
    if request.owner is not None and carries_change_cursor(request.contract):
        call.change_cursor = serving.published.change_cursor(version)
    return call


def page_window(
    contract: EndpointContract,
    limit: int | None,
    offset: int | None,
    cursor: CursorState | None,
) -> PageWindow | None:
    """Pagination: the rows of this page (offset endpoints refuse an oversized ``limit``,
    cursor endpoints lower it to the maximum)."""
    paging = contract.paging
    if paging.kind == "none":
        return None
    assert paging.default_limit and paging.max_limit
    size = limit or paging.default_limit
    if paging.kind == "offset":
        if size > paging.max_limit:
            raise ApiError("bad_request", f"limit max is {paging.max_limit}")
        return PageWindow(offset=offset or 0, limit=size, number=1)
    size = min(size, paging.max_limit)
    if cursor is None:
        return PageWindow(offset=0, limit=size, number=1)
    return PageWindow(offset=cursor.offset, limit=size, number=cursor.page)


def apply_history_floor(call: EndpointCall) -> None:
    """Request rule 7: on Free, history starts one year before today (UTC), with a warning."""
    plan = call.plan
    if not (call.contract.history_floor and plan and plan.history_floor_years):
        return
    call.floor = years_before(call.today, plan.history_floor_years)
    start, end = call.params.get("start"), call.params.get("end")
    notice = f"Free plan history starts at {call.floor.isoformat()} (one year before today, UTC)"
    if end is not None and end < call.floor:
        call.warnings.append(
            f"{notice}; the requested window ends before it, so there are no rows. "
            "Upgrade to Pro for full history."
        )
    elif start is None or start < call.floor:
        call.warnings.append(
            f"{notice}; rows before it are not returned. Upgrade to Pro for full history."
        )


def subjects_sent(call: EndpointCall) -> tuple[list[str], list[int]]:
    """The tickers of the path (any ``{ticker}`` path) and the ``entity_id`` values."""
    raw = call.path.get("tickers") or call.path.get("ticker")
    return parse_tickers(raw), call.params.get("entity_id") or []


def check_tickers_per_request(call: EndpointCall, subjects: tuple[list[str], list[int]]) -> None:
    """Rule 1 and the plan's tickers per request (400)."""
    if call.contract.subject:
        check_subject_count(call.contract.subject, call.plan, *subjects)


def admit_to_quota(
    quotas: Quotas | None, request: DataRequest, subjects: tuple[list[str], list[int]]
) -> Ticket | None:
    """Quotas: reserve this request's cost (one, or one per ticker where the contract counts
    tickers) or refuse it with 429."""
    if quotas is None:
        return None
    tickers, entity_ids = subjects
    counts_tickers = request.contract.counts_per != "request"
    cost = max(1, len(tickers or entity_ids)) if counts_tickers else 1
    return quotas.admit(request.owner, request.client_ip, cost)


def answer_cache_key(call: EndpointCall, request: DataRequest) -> str:
    """The response cache's key: the version, the view (plan or keyless, and the UTC day,
    which moves Free's floor), the path and the parameters."""
    view = f"{call.plan.code if call.plan else 'keyless'}:{call.today.isoformat()}"
    if request.fit is not None:
        view += f":{request.fit.name}"
    return cache_key(call.version.label, view, request.url_path, request.sent)


def cached_or_handled(
    serving: Serving,
    call: EndpointCall,
    request: DataRequest,
    ticket: Ticket | None,
    subjects: tuple[list[str], list[int]],
    key: str,
) -> EndpointAnswer | CachedAnswer:
    """The cached answer, else the subjects resolved and the handler's answer.

    An error after admission keeps the reservation when the spec counts it (404, 409, 5xx:
    with the quota headers on 404 and 409) and gives it back when the request is refused (400,
    402, 429)."""
    quotas = serving.quotas
    try:
        as_of = call.params.get("as_of")
        if quotas and call.owner and as_of and call.contract.index_as_of_allowance:
            quotas.admit_index_as_of(call.owner, as_of)
        hit = serving.cache.get(key)
        if serving.metrics is not None:
            serving.metrics.cache_looked_up(hit is not None)
        if hit is not None:
            return hit
        if call.contract.subject:
            resolve_tickers(call, *subjects)
        check_request_time()
        answer = handler_for(call.contract)(call)
        check_request_time()  # an answer built past the deadline is not sent
        return answer
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


def resolve_tickers(call: EndpointCall, tickers: list[str], entity_ids: list[int]) -> None:
    """The entities the tickers named on the request's date: the end of the window, or the
    point in time asked for, never after today (404 unknown, 409 ambiguous)."""
    subject = call.contract.subject
    assert subject is not None
    on = next(
        (call.params.get(n) for n in ("end", "as_of", "date", "quarter") if call.params.get(n)),
        None,
    )
    on = min(on, call.today) if on else call.today
    call.subject_date = on
    call.subjects = resolve_subjects(call.directory, subject, tickers, entity_ids, on)
    call.warnings += call.subjects.warnings


def respond(
    serving: Serving,
    call: EndpointCall,
    request: DataRequest,
    answer: EndpointAnswer | CachedAnswer,
    ticket: Ticket | None,
    key: str,
) -> DataResponse:
    """The 200: the quota settled (rows and entities counted), the envelope and its headers; a
    new answer is kept in the response cache unless it says ``no-store``."""
    quotas = serving.quotas
    notices = notice_headers(request.user_agent, serving.client_latest_version)
    if isinstance(answer, CachedAnswer):
        headers = {**answer.headers, "Age": str(answer.age(serving.clock.now()))}
        if quotas is not None and ticket is not None:
            headers.update(
                quotas.settle(
                    ticket, call.contract.name, 200, answer.rows, answer.entity_ids, cached=True
                )
            )
        return DataResponse(answer.body, {**headers, **notices})

    def body(fitted: EndpointAnswer) -> bytes:
        cursor = next_cursor(serving.cursors, call, request, fitted)
        return json_bytes(envelope(call, fitted, cursor))

    if request.fit is not None:
        answer = request.fit(call, answer, body)
    rows = answer.row_count if answer.row_count is not None else len(answer.rows)
    served = answer.entity_ids if answer.entity_ids is not None else entity_ids_of(answer.rows)
    headers: dict[str, str] = {}
    if quotas is not None and ticket is not None:
        headers = quotas.settle(ticket, call.contract.name, 200, rows, served)
    sent = body(answer)
    headers["Cache-Control"] = answer.cache_control
    if call.floor is not None:
        headers["X-Data-Floor"] = call.floor.isoformat()
    if answer.cache_control != "no-store":
        kept = {name: headers[name] for name in CACHED_HEADERS if name in headers}
        stored_at = serving.clock.now().timestamp()
        serving.cache.put(key, CachedAnswer(sent, kept, stored_at, rows, served))
    return DataResponse(sent, {**headers, **notices})


def next_cursor(
    codec: CursorCodec, call: EndpointCall, request: DataRequest, answer: EndpointAnswer
) -> str | None:
    """Pagination: the cursor of the next page, bound to this request and version (None on
    the last page)."""
    if not (answer.has_more and call.contract.paging.kind == "cursor" and call.page):
        return None
    assert answer.next_offset is not None
    state = CursorState(call.version.label, answer.next_offset, call.page.number + 1)
    return codec.issue(request.fingerprint(), state)
