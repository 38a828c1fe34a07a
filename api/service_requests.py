"""Answering a service endpoint (``kind: service`` in its contract: status, usage).

A service endpoint has none of the data request steps: no parameters but the key (which the
front end has read already, or never reads), no plan gate, no quota and no counting, no
published version to lease. Its handler's object is the whole body; the client version notices
are added as the spec says for ``/v1/status`` and ``/v1/auth/usage``.
"""

from __future__ import annotations

from findata.api.calls import ServiceAnswer, ServiceCall, endpoint_handle
from findata.api.client_notices import notice_headers
from findata.api.data_requests import DataRequest, DataResponse, Serving, answer_data_request
from findata.api.responses import json_bytes


def answer_request(serving: Serving, request: DataRequest) -> DataResponse:
    """The answer to a request to any endpoint: the service steps or the data steps, by the
    contract's kind (the REST routes and the MCP tools both come here)."""
    if request.contract.kind == "service":
        return answer_service_request(serving, request)
    return answer_data_request(serving, request)


def answer_service_request(serving: Serving, request: DataRequest) -> DataResponse:
    """The handler's body with its ``Cache-Control`` and the client version notices."""
    call = ServiceCall(
        request.contract,
        request.owner,
        serving.control_plane,
        serving.counters,
        serving.clock.now(),
        serving.published,
    )
    answer: ServiceAnswer = endpoint_handle(request.contract.name)(call)
    notices = notice_headers(request.user_agent, serving.client_latest_version)
    headers = {"Cache-Control": answer.cache_control, **notices}
    return DataResponse(json_bytes(answer.body), headers)
