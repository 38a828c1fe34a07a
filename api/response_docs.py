"""The responses of each route in the OpenAPI document, generated from the contracts: the 200
body (the envelope of the contract's kind, ``meta`` for its paging, each row field typed by the
dataset contracts with its nullability), the error body of each status the endpoint can answer
(its ``code`` limited to the catalogue's codes of that status), and the response headers of the
spec's table that the endpoint sends. Fields, types, statuses' codes and the handlers' extras
are read from ``contracts/``; the envelope shapes per kind follow ``api/envelopes.py``, and the
response headers are the spec's table (no contract holds them), listed below."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from findata.api.envelopes import carries_change_cursor
from findata.api.headers import REQUEST_ID_HEADER
from findata.contracts.endpoints import EndpointContract, load_endpoint_contract
from findata.contracts.errors import load_errors
from findata.contracts.fields import field_type

Schema = dict[str, Any]

#: each dataset column type as JSON
JSON_TYPES: dict[str, Schema] = {
    "BIGINT": {"type": "integer"},
    "INTEGER": {"type": "integer"},
    "DOUBLE": {"type": "number"},
    "VARCHAR": {"type": "string"},
    "DATE": {"type": "string", "format": "date"},
    "BOOLEAN": {"type": "boolean"},
}
STRING, INTEGER, BOOLEAN = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}
STRINGS = {"type": "array", "items": STRING}
OBJECT: Schema = {"type": "object"}

#: the spec's "Response headers" and its client version notices, with what each says
QUOTA_HEADERS = {
    "X-RateLimit-Limit-Day": "The plan's (or, without a key, the address's) daily requests.",
    "X-RateLimit-Remaining-Day": "Requests left today (UTC), never below 0.",
    "X-RateLimit-Limit-Hour": "Hourly requests (Free keys and keyless only).",
    "X-RateLimit-Remaining-Hour": "Requests left this clock hour (Free keys and keyless only).",
}
ANSWER_HEADERS = {
    "X-Rows-Today": "Rows counted today including this response (keyed, not cached).",
    "X-Entities-Today": "Distinct entities served today including this response (as above).",
}
FLOOR_HEADER = {"X-Data-Floor": "The earliest date Free can read (one year before today, UTC)."}
CACHE_HEADERS = {
    "Cache-Control": "How long the answer may be kept.",
    "Age": "Seconds the answer was in findata's cache (cached answers only).",
}
NOTICE_HEADERS = {
    "X-Service-Client-Latest": "The recommended findata-python version (outdated clients).",
    "X-Service-Client-Update": "`true` when the client named in User-Agent is outdated.",
    "X-Service-Client-Update-Message": "What to upgrade to (outdated clients).",
    "Warning": "299 with the same message (outdated clients).",
}
CORS_HEADER = {"Access-Control-Expose-Headers": "Every header above, for browsers."}
REQUEST_ID = {
    REQUEST_ID_HEADER: "This request's id, also in each of its log lines: the X-Request-Id the "
    "request carried (1 to 128 letters, digits and - _ . : + / =), else a new one.",
}
#: where the change feed is served (the target of every data answer's ``changesSince`` link)
CHANGES_PATH = load_endpoint_contract("changes").paths[0]


def route_responses(contract: EndpointContract, path: str) -> dict[int | str, Schema]:
    """The ``responses`` of the contract's route at ``path``."""
    responses: dict[int | str, Schema] = {
        200: {
            "description": "The answer.",
            "content": {"application/json": {"schema": body_schema(contract)}},
            "headers": _headers(contract, 200),
        }
    }
    links = answer_links(contract, path)
    if links:
        responses[200]["links"] = links
    for status in error_statuses(contract):
        responses[status] = {
            "description": ", ".join(_codes_of(status)),
            "content": {"application/json": {"schema": error_schema(status)}},
            "headers": _headers(contract, status),
        }
    return responses


def answer_links(contract: EndpointContract, path: str) -> Schema:
    """OpenAPI links of a 200 (what a client, or schemathesis's stateful tests, asks next):
    the next page, sent with the request's own parameters and the answer's cursor (a cursor
    is bound to the request that got it), and the change feed from the answer's
    ``change_cursor``."""
    meta = _meta_schema(contract)["properties"]
    links: Schema = {}
    follow = "cursor" if contract.paging.kind == "cursor" else "since"
    if "next_cursor" in meta and contract.parameter(follow) is not None:
        same = {name: f"$request.path.{name}" for name in re.findall(r"{(\w+)}", path)}
        same |= {
            p.name: f"$request.query.{p.name}"
            for p in contract.all_parameters
            if not p.in_path and p.name != follow
        }
        links["nextPage"] = {
            "operationRef": _operation_ref(path),
            "parameters": {**same, follow: "$response.body#/meta/next_cursor"},
            "description": "The next page of the same query.",
        }
    if "change_cursor" in meta:
        links["changesSince"] = {
            "operationRef": _operation_ref(CHANGES_PATH),
            "parameters": {"since": "$response.body#/meta/change_cursor"},
            "description": "The change feed from the data this answer read.",
        }
    return links


def _operation_ref(path: str) -> str:
    """A JSON pointer to the GET operation of ``path`` in this document."""
    return "#/paths/" + path.replace("~", "~0").replace("/", "~1") + "/get"


def body_schema(contract: EndpointContract) -> Schema:
    """The 200 body of the contract's envelope kind, with the handler's declared extras."""
    rows = {"type": "array", "items": row_schema(contract)}
    top = {name: _kind(kind) for name, kind in contract.envelope_extras.top.items()}
    common = {"meta": _meta_schema(contract), "warnings": STRINGS, **top}
    if contract.envelope == "body":
        return row_schema(contract)
    if contract.envelope == "resolve":
        # per ticker: the entities it names, and the ticker's succession links
        named = _object(
            {"entities": rows, "succession": {"type": "array", "items": OBJECT}},
            required=["entities"],
        )
        data = {"type": "object", "additionalProperties": named}
        return _object({"data": data, **common}, required=["data", "meta"])
    if contract.envelope == "counted":
        counted = {"data": rows, "count": INTEGER, "next_cursor": _nullable(STRING)}
        return _object({**counted, **common}, required=["data", "count", "next_cursor", "meta"])
    return _object({"data": rows, **common}, required=["data", "meta"])


def row_schema(contract: EndpointContract) -> Schema:
    """One row: the identity and selectable fields, typed where a dataset names them."""
    names = contract.fields.by_default
    properties = {}
    for name in names:
        duck, nullable = field_type(name, contract)
        typed = dict(JSON_TYPES[duck]) if duck in JSON_TYPES else {}
        properties[name] = _nullable(typed) if nullable and typed else typed
    keyed_only = contract.fields.keyed_only
    required = [name for name in contract.fields.identity if name not in keyed_only]
    return _object(properties, required=required)


def _meta_schema(contract: EndpointContract) -> Schema:
    """``meta``: by envelope kind, the count, the paging fields of the contract's paging kind,
    the subjects, the data's date and change cursor; then what the contract says its handler
    adds (``envelope_extras``)."""
    properties: Schema = {}
    required: list[str] = []
    if carries_change_cursor(contract):
        properties["change_cursor"] = STRING  # keyed answers: where their change feed starts
    if contract.envelope == "counted":
        properties |= {"has_more": BOOLEAN, "next_cursor": _nullable(STRING)}
        required += ["has_more", "next_cursor"]
    elif contract.envelope == "data_meta":
        properties["count"] = INTEGER
        required.append("count")
        if contract.dataset:
            properties["data_through"] = _nullable(STRING)
        if contract.subject is not None:
            properties |= {
                "tickers_requested": STRINGS,
                "tickers_resolved": OBJECT,
                "entity_ids_requested": {"type": "array", "items": INTEGER},
                "tickers_ambiguous": OBJECT,
            }
        paging = _paging_meta(contract)
        properties |= paging
        required += [name for name in paging if name != "limit" or contract.paging.kind == "offset"]
    properties |= {name: _kind(kind) for name, kind in contract.envelope_extras.meta.items()}
    return _object(properties, required=required)


def _paging_meta(contract: EndpointContract) -> Schema:
    """The paging fields of ``meta`` (spec "Pagination")."""
    if contract.paging.kind == "cursor":
        paging = {"has_more": BOOLEAN, "next_cursor": _nullable(STRING)}
        return {**paging, "limit": INTEGER} if contract.paging.limit_in_meta else paging
    if contract.paging.kind == "offset":
        return {
            "limit": INTEGER,
            "offset": INTEGER,
            "total": _nullable(INTEGER),
            "has_more": BOOLEAN,
        }
    return {}


def _kind(kind: str) -> Schema:
    """A JSON kind of ``contracts/endpoints.py``'s ``EnvelopeExtras`` as a schema."""
    if kind == "string_or_null":
        return _nullable(STRING)
    if kind == "strings":
        return STRINGS
    return {"type": kind}


def error_statuses(contract: EndpointContract) -> list[int]:
    """The error statuses the endpoint can answer (spec "Errors")."""
    statuses = {400, 500}
    if contract.key != "never":
        statuses |= {401, 403}
    if contract.capability:
        statuses.add(402)
    names_tickers = contract.subject is not None or contract.envelope == "resolve"
    if names_tickers:  # unknown (404) and ambiguous (409) tickers
        statuses |= {404, 409}
    elif any("{" in path for path in contract.paths):  # an unknown manager
        statuses.add(404)
    if contract.capability == "changes":
        statuses.add(410)
    if contract.counts_per != "none":
        statuses.add(429)
    if contract.kind == "data":
        statuses.add(504)
    return sorted(statuses)


def error_schema(status: int) -> Schema:
    """The error body of ``status``: ``error``, ``code``, ``status``, ``detail`` always; the
    extra fields some codes carry (``message``, ``retry_after_seconds``, ``candidates``…)."""
    return {
        "type": "object",
        "required": ["error", "code", "status", "detail"],
        "properties": {
            "error": STRING,
            "code": {"type": "string", "enum": _codes_of(status)},
            "status": {"type": "integer", "enum": [status]},
            "detail": STRING,
            "message": STRING,
            "retry_after_seconds": INTEGER,
        },
        "additionalProperties": True,
    }


@cache
def _codes_by_status() -> dict[int, list[str]]:
    by_status: dict[int, list[str]] = {}
    for code, error in load_errors().errors.items():
        by_status.setdefault(error.status, []).append(code)
    return by_status


def _codes_of(status: int) -> list[str]:
    return _codes_by_status()[status]


def _headers(contract: EndpointContract, status: int) -> Schema:
    """The headers of the spec's table that ``status`` answers of this endpoint may carry."""
    named: dict[str, str] = CORS_HEADER | REQUEST_ID
    counted = contract.counts_per != "none"
    if counted and status in (200, 404, 409):
        named |= QUOTA_HEADERS
    if status == 200:
        named |= CACHE_HEADERS
        if contract.kind == "data":
            named |= ANSWER_HEADERS
        if contract.history_floor:
            named |= FLOOR_HEADER
    if status in (200, 400, 402, 404, 409, 429):
        named |= NOTICE_HEADERS
    return {name: {"description": text, "schema": STRING} for name, text in named.items()}


def _object(properties: Schema, *, required: list[str]) -> Schema:
    """An object of exactly these properties (no other)."""
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _nullable(schema: Schema) -> Schema:
    """``schema`` or null (OpenAPI 3.1: a list of types)."""
    typed = dict(schema)
    typed["type"] = [schema["type"], "null"]
    return typed


def without_validation_errors(document: Schema) -> Schema:
    """FastAPI documents a 422 on every route with parameters; findata never answers one (a
    parameter problem is the spec's 400, documented per route): drop it and its schemas."""
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            operation.get("responses", {}).pop("422", None)
    schemas = document.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    return document
