"""Endpoint contracts: ``contracts/endpoints/<name>.yaml``, one per endpoint of the spec.

Two kinds: ``data`` endpoints read a published version and run the spec's data request rules
(validation, plan gates, quotas, paging, the envelope); ``service`` endpoints (``/v1/status``,
``/v1/auth/usage``) answer about the service or the account, are never counted and read no
parameters but the key.

A contract names the endpoint's paths, whether it needs a key and which plan capability, its
parameters (type, allowed values, ranges, defaults and the exact 400 texts), the response fields
(identity and selectable), the row order, and the paging kind with its default and maximum
``limit``. The API's routes, validation and OpenAPI are generated from these files
(``api/generate.py``); parameters every endpoint of a kind shares (``api_key``, ``limit``,
``cursor``, ``offset``) are added here from the key rule and the paging kind, so no file
restates them.
"""

from __future__ import annotations

import datetime as dt
from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from findata.contracts.plans import Capability

ENDPOINTS_DIR = Path(__file__).parent / "endpoints"
COMMON_FILE = Path(__file__).parent / "parameters.yaml"

ParameterType = Literal[
    "date", "enum", "flag", "quarter", "positive_int", "positive_ints", "text", "fields",
    "limit", "offset", "cursor", "key",
]  # fmt: skip


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Parameter(_Strict):
    """One query (or path) parameter and how it is validated."""

    name: str
    type: ParameterType
    description: str
    values: list[str] | None = Field(default=None, description="enum: the accepted values.")
    case_insensitive: bool = False
    default: str | None = None
    min: dt.date | None = Field(default=None, description="date: the earliest accepted.")
    max: dt.date | None = Field(default=None, description="date: the latest accepted.")
    min_length: int | None = Field(default=None, description="text: the shortest accepted.")
    error: str | None = Field(
        default=None,
        description="The 400 detail for a bad value ({value}, {min}, {max}, {name} filled in).",
    )
    format_error: str | None = Field(
        default=None, description="date: the 400 detail when the value is no real date."
    )
    in_path: bool = False
    before_plan_check: bool = Field(
        default=True, description="Validated before the 402 (the spec's rule 6), else after."
    )


class RowCursor(_Strict):
    """A cursor every row carries: passed back, it reads the rows after that row."""

    field: str = Field(description="The row field holding the cursor.")
    parameter: str = Field(description="The parameter that takes it back.")


class Paging(_Strict):
    """How results are split into pages."""

    kind: Literal["cursor", "offset", "none"]
    default_limit: int | None = None
    max_limit: int | None = None
    limit_in_meta: bool = Field(default=False, description="meta.limit reports the page size.")
    row_cursor: RowCursor | None = Field(
        default=None,
        description="Paging by a cursor each row carries (the change feed): a page cut short "
        "after a row goes on from that row's cursor.",
    )

    @model_validator(mode="after")
    def _sizes(self) -> Paging:
        if self.kind != "none" and not (self.default_limit and self.max_limit):
            raise ValueError("paged endpoints need default_limit and max_limit")
        return self


class Fields(_Strict):
    """Response fields: always present (identity) and chosen with ``fields`` (selectable)."""

    identity: list[str]
    selectable: list[str] = Field(default_factory=list)
    hidden: list[str] = Field(
        default_factory=list, description="Read for ordering or paging, never returned."
    )
    keyed_only: list[str] = Field(
        default_factory=list, description="Identity fields an answer without a key omits."
    )

    @property
    def by_default(self) -> list[str]:
        """The fields of a row when ``fields`` is not sent: identity, then every selectable."""
        return [*self.identity, *self.selectable]


JsonKind = Literal["string", "string_or_null", "integer", "boolean", "object", "strings"]


class EnvelopeExtras(_Strict):
    """What an endpoint's handler adds to the envelope beyond its kind's fields, with each
    field's JSON kind (the OpenAPI schema is generated from it; the response test holds the
    handler to it)."""

    meta: dict[str, JsonKind] = Field(default_factory=dict)
    top: dict[str, JsonKind] = Field(default_factory=dict, description="Beside data and meta.")


class OrderTerm(_Strict):
    """One term of the row order."""

    column: str
    descending: bool = False


class Subject(_Strict):
    """What the request is about: tickers in the path, entity ids, or nothing."""

    path_parameter: str | None = Field(default=None, description="The path's ticker list.")
    entity_id_parameter: bool = Field(default=False, description="Accepts ?entity_id=.")
    grain: Literal["security", "company"] = Field(
        description="security: a ticker naming several securities is ambiguous; company: "
        "several share classes of one company are served at the company level."
    )
    limit: Literal["tickers_per_request", "resolve_tickers_per_request"] = "tickers_per_request"
    candidates: Literal["objects", "entity_ids"] = Field(
        default="objects",
        description="409 candidates: objects (prices, fundamentals, metrics, resolve) or "
        "entity_id integers (insiders, holdings).",
    )


class EndpointContract(_Strict):
    """One endpoint of the spec."""

    name: str
    kind: Literal["data", "service"] = "data"
    summary: str
    description: str
    paths: list[str] = Field(min_length=1)
    key: Literal["required", "optional", "never"] = Field(
        description="never: the key is not read at all (the same answer with or without one)."
    )
    capability: Capability | None = None
    envelope: Literal["data_meta", "counted", "resolve", "body"] = Field(
        description="body: the handler's object is the whole body (service endpoints)."
    )
    dataset: str | None = Field(default=None, description="The published dataset it reads.")
    subject: Subject | None = None
    history_floor: str | None = Field(
        default=None, description="The date column the Free one-year floor applies to."
    )
    parameters: list[Parameter] = Field(default_factory=list)
    fields: Fields
    envelope_extras: EnvelopeExtras = Field(default_factory=EnvelopeExtras)
    order: list[OrderTerm] = Field(default_factory=list)
    order_description: str | None = Field(
        default=None, description="The spec's words for the row order (data endpoints)."
    )
    paging: Paging
    variants: dict[str, str] = Field(
        default_factory=dict,
        description="Variants of this endpoint's parameter names and their suggestion, over "
        "the common ones of parameters.yaml.",
    )
    index_as_of_allowance: bool = Field(
        default=False,
        description="Requests with `as_of` use the plan's distinct index as_of dates per day.",
    )
    counts_per: Literal["subject", "request", "none"] = Field(
        default="subject",
        description="Quota: one request per ticker/entity_id, one, or none (service endpoints).",
    )

    @model_validator(mode="after")
    def _consistent(self) -> EndpointContract:
        names = [p.name for p in self.parameters]
        if len(names) != len(set(names)):
            raise ValueError(f"{self.name}: a parameter is declared twice")
        for parameter in self.parameters:
            if parameter.type == "enum" and not parameter.values:
                raise ValueError(f"{self.name}.{parameter.name}: an enum needs values")
        service = self.kind == "service"
        if service != (self.envelope == "body") or service != (self.counts_per == "none"):
            raise ValueError(
                f"{self.name}: service endpoints, and only they, have envelope "
                "body and counts_per none"
            )
        if service and (
            self.parameters
            or self.paging.kind != "none"
            or self.dataset
            or self.subject
            or self.capability
            or self.order
        ):
            raise ValueError(
                f"{self.name}: a service endpoint reads no parameters, data, "
                "subject or page and has no plan gate"
            )
        if not service and (self.key == "never" or not self.order_description):
            raise ValueError(f"{self.name}: a data endpoint reads the key and has a row order")
        cursor = self.paging.row_cursor
        if cursor and (
            cursor.field not in self.fields.identity or not self.parameter(cursor.parameter)
        ):
            raise ValueError(
                f"{self.name}: a row cursor is a field of every row, sent back as a parameter"
            )
        return self

    @property
    def all_parameters(self) -> list[Parameter]:
        """The declared parameters plus those of the key rule and the paging kind."""
        common = load_common_parameters()
        added = []
        if self.key in ("required", "optional"):
            added.append(common["api_key"])
        if self.paging.kind == "cursor":
            added += [common["limit"], common["cursor"]]
        elif self.paging.kind == "offset":
            added += [common["limit"], common["offset"]]
        return [*self.parameters, *added]

    def parameter(self, name: str) -> Parameter | None:
        """The parameter called ``name``, if the endpoint reads it."""
        return next((p for p in self.all_parameters if p.name == name), None)


class CommonParameters(_Strict):
    """Parameters shared by kinds of endpoint, and the variants people write for real names."""

    parameters: list[Parameter]
    variants: dict[str, str] = Field(
        description="A common variant of a parameter name -> the suggestion in the warning."
    )


@cache
def _common() -> CommonParameters:
    return CommonParameters.model_validate(yaml.safe_load(COMMON_FILE.read_text()))


def load_common_parameters() -> dict[str, Parameter]:
    """``api_key``, ``limit``, ``cursor``, ``offset`` by name."""
    return {p.name: p for p in _common().parameters}


def parameter_variants(contract: EndpointContract | None = None) -> dict[str, str]:
    """Variants of parameter names and what to suggest instead (an endpoint's own first)."""
    return {**_common().variants, **(contract.variants if contract else {})}


@cache
def load_endpoint_contract(name: str) -> EndpointContract:
    """Load and validate ``contracts/endpoints/<name>.yaml``."""
    path = ENDPOINTS_DIR / f"{name}.yaml"
    return EndpointContract.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))


def endpoint_names() -> list[str]:
    """Every endpoint that has a contract."""
    return sorted(p.stem for p in ENDPOINTS_DIR.glob("*.yaml"))
