"""Routes generated from ``contracts/endpoints/*.yaml``: one GET route per contract path.

A generated route reads the key as its contract says (``api/deps.py: KEY_CHECKS``; never, on a
service endpoint whose contract says so), turns the HTTP request into a ``DataRequest`` and
answers it with ``api/service_requests.py``: a data endpoint runs the spec's steps in order
(``api/data_requests.py``), a service endpoint (status, usage) its handler alone. The route's
signature lists every parameter with its description and allowed values, so ``/openapi.json``
and ``/docs`` document the contract; FastAPI documents it but does not run it (``_route_class``).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from findata.api.auth import KeyCheck
from findata.api.data_requests import UPGRADE_TEXT, DataRequest, Serving
from findata.api.deps import KEY_CHECKS
from findata.api.front_door import path_value
from findata.api.response_docs import route_responses
from findata.api.service_requests import answer_request
from findata.contracts.endpoints import (
    EndpointContract,
    Parameter,
    endpoint_names,
    load_endpoint_contract,
)


def add_contract_routes(router: APIRouter) -> None:
    """Every contract's routes, added to ``router`` (the app's own: a route of an included
    router is matched through one more layer on every request)."""
    for name in endpoint_names():
        contract = load_endpoint_contract(name)
        for path in contract.paths:
            router.add_api_route(
                path,
                _route(contract, path),
                methods=["GET"],
                name=f"{name}:{path}",
                summary=contract.summary,
                description=_description(contract),
                response_class=Response,
                responses=route_responses(contract, path),
                tags=[name],
                route_class_override=_route_class(contract),
            )


def _route_class(contract: EndpointContract) -> type[APIRoute]:
    """The route class of ``contract``'s routes: FastAPI documents the route's signature in
    the OpenAPI document, but a request is served in one step on one worker thread (the key
    read, then the data request), without FastAPI's per-parameter validation (ours, with the
    spec's texts, runs anyway) or a thread hop per dependency."""
    check_key = KEY_CHECKS[contract.key]

    class ContractRoute(APIRoute):
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            route = self.endpoint

            def served(request: Request) -> Response:
                return route(request, check_key(request, request.app.state.accounts))

            async def handle(request: Request) -> Response:
                return await run_in_threadpool(served, request)

            return handle

    return ContractRoute


def _route(contract: EndpointContract, path: str) -> Callable[..., Response]:
    path_names = re.findall(r"{(\w+)}", path)

    def route(request: Request, key: KeyCheck, **_documented: Any) -> Response:
        # errors of a data endpoint from here on may carry client notices
        request.state.data_endpoint = contract.kind == "data"
        serving: Serving = request.app.state.serving
        data_request = DataRequest.of(
            contract,
            path,
            request.url.path,
            {name: path_value(value) for name, value in request.path_params.items()},
            request.query_params,
            key,
            request.client.host if request.client else "unknown",
            request.headers.get("user-agent"),
        )
        answer = answer_request(serving, data_request)
        return Response(answer.body, media_type="application/json", headers=answer.headers)

    parameters = [
        inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Request),
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
    lines = [contract.description, ""]
    if contract.order_description:
        lines.append(f"Row order: {contract.order_description}")
    if contract.paging.kind != "none":
        lines.append(
            f"Paging: {contract.paging.kind}, limit {contract.paging.default_limit} by default, "
            f"at most {contract.paging.max_limit}."
        )
    if contract.capability:
        lines.append(f"Plans: {UPGRADE_TEXT[contract.capability]}")
    return "\n".join(lines)
