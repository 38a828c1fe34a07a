"""MCP tools generated from ``contracts/endpoints/*.yaml``: one tool per endpoint contract.

A tool is named ``get_<contract name>`` (``get_prices``, ``get_index``...). Its arguments are the
contract's path and query parameters, except the key (the MCP request carries it as the REST
API reads it); the subject's ticker list is the argument ``ticker`` (the spec's name). Input
schemas describe types, allowed values and ranges, but the tool call is validated by the same
steps as the REST route, so a bad argument gets the REST 400 body, not a schema error.

The output schema is the REST body's (``api/response_docs.py``, from the contracts) with what
the result budget adds to ``meta`` (``api/mcp/budget.py``). Every tool only reads: its
annotations say so. "One of ``ticker`` or ``entity_id``" is said in words, not as a root
``anyOf``/``oneOf``: model APIs that MCP clients hand tool schemas to (Anthropic's, OpenAI's)
refuse composition keywords at the root of an input schema, and some clients drop such tools.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from findata.api.mcp.budget import BUDGET_META, pages
from findata.api.response_docs import body_schema
from findata.contracts.endpoints import (
    EndpointContract,
    Parameter,
    endpoint_names,
    load_endpoint_contract,
)

#: the argument that carries the path's ticker list
TICKER_ARGUMENT = "ticker"
#: a calendar quarter's last day
QUARTER_END = r"^\d{4}-(03-31|06-30|09-30|12-31)$"


def tool_name(contract: EndpointContract) -> str:
    """The tool of an endpoint: ``get_`` and the contract's name."""
    return f"get_{contract.name}"


def tool_contracts() -> dict[str, EndpointContract]:
    """Every endpoint contract by its tool name."""
    contracts = (load_endpoint_contract(name) for name in endpoint_names())
    return {tool_name(contract): contract for contract in contracts}


def _schema(contract: EndpointContract, parameter: Parameter, budget: int) -> dict[str, Any]:
    """The JSON Schema of one argument, from its contract parameter."""
    schema: dict[str, Any] = {"description": parameter.description}
    match parameter.type:
        case "date":
            schema |= {"type": "string", "format": "date"}
            if parameter.min:
                schema["formatMinimum"] = parameter.min.isoformat()
            if parameter.max:
                schema["formatMaximum"] = parameter.max.isoformat()
        case "enum":
            schema |= {"type": "string", "enum": parameter.values}
        case "flag":
            schema |= {"type": "boolean"}
        case "limit":
            schema |= {"type": "integer", "minimum": 1}
            if contract.paging.max_limit:
                schema["description"] += f" At most {contract.paging.max_limit}."
            if pages(contract):
                schema["description"] += (
                    f" Without it, a result holds the rows that fit in {budget} "
                    "bytes; with it, this many rows a page (whatever their size)."
                )
        case "offset":
            schema |= {"type": "integer", "minimum": 0}
        case "positive_int":
            schema |= {"type": "integer", "minimum": 1}
        case "positive_ints":
            schema |= {"type": "array", "items": {"type": "integer", "minimum": 1}}
        case "fields":
            schema |= {
                "type": "array",
                "items": {"type": "string", "enum": contract.fields.selectable},
            }
        case "quarter":
            schema |= {
                "type": "string",
                "format": "date",
                "pattern": r"^\d{4}-(03-31|06-30|09-30|12-31)$",
            }
        case _:
            schema |= {"type": "string"}
            if parameter.min_length:
                schema["minLength"] = parameter.min_length
    if parameter.default is not None:
        schema["default"] = parameter.default
    return schema


def _path_argument(contract: EndpointContract, name: str) -> str:
    """The argument of a path parameter (the subject's ticker list is ``ticker``)."""
    if contract.subject and name == contract.subject.path_parameter:
        return TICKER_ARGUMENT
    return name


def tool_definition(contract: EndpointContract, budget: int) -> types.Tool:
    """The MCP tool of ``contract`` whose results are held to ``budget`` bytes: its description,
    input and output schemas, annotations."""
    return types.Tool(
        name=tool_name(contract),
        title=contract.summary,
        description=_description(contract, budget),
        input_schema=input_schema(contract, budget),
        output_schema=output_schema(contract),
        annotations=types.ToolAnnotations(
            title=contract.summary,
            read_only_hint=True,  # every tool reads published data or the account's usage
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,  # findata's own data, no outside world
        ),
    )


def _takes_ticker_or_entity_id(contract: EndpointContract) -> bool:
    """Whether the tool reads its subject from ``ticker`` or ``entity_id`` (one of them)."""
    subject = contract.subject
    return bool(subject and subject.path_parameter and subject.entity_id_parameter)


def _description(contract: EndpointContract, budget: int) -> str:
    """The contract's summary and description, its row order, what names the subject and how
    the result reads."""
    description = f"{contract.summary}. {contract.description}"
    if contract.order_description:
        description += f" Row order: {contract.order_description}"
    if _takes_ticker_or_entity_id(contract):
        description += f" Give `{TICKER_ARGUMENT}` or `entity_id`: one of them is required."
    if pages(contract):
        description += (
            f" The result: `warnings` and `meta` first, the rows in `data`; without `limit` "
            f"it is cut to {budget} bytes and `meta` says how to go on."
        )
    return description


def input_schema(contract: EndpointContract, budget: int) -> dict[str, Any]:
    """The tool's arguments: the contract's path and query parameters but the key."""
    properties: dict[str, Any] = {}
    in_every_path = set(re.findall(r"{(\w+)}", contract.paths[0]))
    for path in contract.paths[1:]:
        in_every_path &= set(re.findall(r"{(\w+)}", path))
    for path in contract.paths:
        for name in re.findall(r"{(\w+)}", path):
            declared = contract.parameter(name)
            argument = _path_argument(contract, name)
            if argument == TICKER_ARGUMENT:
                properties[argument] = {
                    "type": "string",
                    "description": "Tickers, comma separated (1 on Free, more on paid plans)."
                    + (
                        " Not together with entity_id."
                        if _takes_ticker_or_entity_id(contract)
                        else ""
                    ),
                }
            elif declared is not None:
                properties[argument] = _schema(contract, declared, budget)
            else:
                properties[argument] = {"type": "string", "description": name}
    for parameter in contract.all_parameters:
        if parameter.in_path or parameter.type == "key":
            continue
        properties[parameter.name] = _schema(contract, parameter, budget)
    required = sorted(_path_argument(contract, name) for name in in_every_path)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def output_schema(contract: EndpointContract) -> dict[str, Any]:
    """The result's JSON Schema: the REST body's, with what the result budget adds to ``meta``."""
    schema = copy.deepcopy(body_schema(contract))  # its parts are shared constants
    if contract.kind == "data" and pages(contract):
        schema["properties"]["meta"]["properties"] |= copy.deepcopy(BUDGET_META)
    return schema


@dataclass(frozen=True)
class ToolRequest:
    """What a tool call asks of the REST path: the contract path, its values and the query."""

    path: str
    url_path: str
    path_values: dict[str, str]
    sent: dict[str, str]


def _as_query_value(value: Any) -> str:
    """An argument as the REST API's query text (lists comma separated, booleans true/false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(_as_query_value(item) for item in value)
    if value is None:
        return ""
    return str(value)


def tool_request(contract: EndpointContract, arguments: dict[str, Any]) -> ToolRequest:
    """The REST request a tool call stands for: the first contract path whose path parameters
    the arguments all give (the ticker path before the ``entity_id`` one), the rest as query
    parameters (unknown names too: the REST steps warn about them)."""
    given = {name: _as_query_value(value) for name, value in arguments.items()}
    for path in contract.paths:
        names = re.findall(r"{(\w+)}", path)
        if all(given.get(_path_argument(contract, name)) for name in names):
            break
    else:
        path = contract.paths[-1]
        names = re.findall(r"{(\w+)}", path)
    path_values = {name: given.pop(_path_argument(contract, name), "") for name in names}
    url_path = path
    for name, value in path_values.items():
        url_path = url_path.replace(f"{{{name}}}", value)
    return ToolRequest(path, url_path, path_values, given)
