"""Query parameters validated by the endpoint's contract, with the spec's 400 texts and its
warnings for parameters the endpoint does not read (spec: "Request rules common to data
endpoints", rules 2–6)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from findata.api.errors import BadRequest
from findata.contracts.endpoints import EndpointContract, Parameter, parameter_variants

DATE_PATTERN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
WHOLE_NUMBER = re.compile(r"[+]?[0-9]+(\.0*)?")  # ASCII digits only
#: the largest value of any integer parameter (BIGINT, a signed 64-bit integer)
LARGEST_WHOLE_NUMBER = 2**63 - 1
MAX_LIMIT_VALUE = 999_999_999
QUARTER_ENDS = {(3, 31), (6, 30), (9, 30), (12, 31)}
PATH_TICKER = "a ticker in the path"


@dataclass
class RequestParams:
    """The validated values (absent parameters are missing), warnings, and the query as sent."""

    values: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    sent: dict[str, str] = field(default_factory=dict)

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)


def first_values(query: Any) -> dict[str, str]:
    """Each parameter's first value (a repeated parameter counts once, as first sent)."""
    values: dict[str, str] = {}
    for name, value in query.multi_items():
        values.setdefault(name, value)
    return values


def validate_parameters(
    contract: EndpointContract, sent: Mapping[str, str], *, before_plan_check: bool
) -> RequestParams:
    """Validate the parameters of one stage (before or after the plan check), in contract order.

    Unknown names become warnings (with a suggestion for common variants) in the first stage.
    """
    params = RequestParams(values={}, sent=dict(sent))
    if before_plan_check:
        params.warnings += _unknown_parameter_warnings(contract, sent)
    for parameter in contract.all_parameters:
        if parameter.in_path or parameter.before_plan_check != before_plan_check:
            continue
        raw = sent.get(parameter.name)
        if raw is None or raw == "":
            if parameter.default is not None:
                params.values[parameter.name] = _parse(parameter, parameter.default, params)
            continue
        params.values[parameter.name] = _parse(parameter, raw, params)
    if before_plan_check:
        _check_window(params)
    return params


def validate_path_parameter(parameter: Parameter, raw: str) -> Any:
    """A path parameter's value (the manager id of manager holdings, after the 402)."""
    return _parse(parameter, raw, RequestParams(values={}))


def _unknown_parameter_warnings(contract: EndpointContract, sent: Mapping[str, str]) -> list[str]:
    # a path parameter sent in the query is not read there: it gets the warning too
    known = {p.name for p in contract.all_parameters if not p.in_path}
    variants = parameter_variants(contract)
    takes_path_ticker = any("{ticker" in path for path in contract.paths)
    warnings = []
    for name in sent:
        if name in known:
            continue
        suggestion = variants.get(name)
        if suggestion == PATH_TICKER and not takes_path_ticker:
            suggestion = None
        if suggestion and (suggestion in known or suggestion == PATH_TICKER):
            hint = suggestion if suggestion.startswith("a ") else f"'{suggestion}'"
            warnings.append(f"Unknown parameter ignored: '{name}'. Did you mean {hint}?")
        else:
            warnings.append(f"Unknown parameter ignored: '{name}'")
    return warnings


def _parse(parameter: Parameter, raw: str, params: RequestParams) -> Any:
    kind = parameter.type
    if kind == "date":
        return _date(parameter, raw)
    if kind == "enum":
        assert parameter.values is not None
        wanted = raw.lower() if parameter.case_insensitive else raw
        for value in parameter.values:
            if wanted == (value.lower() if parameter.case_insensitive else value):
                return value
        raise BadRequest(_text(parameter, raw))
    if kind == "flag":
        if raw.lower() in ("true", "false"):
            return raw.lower() == "true"
        raise BadRequest(_text(parameter, raw, f"{parameter.name} must be true or false"))
    if kind == "quarter":
        day = _real_date(raw)
        if day is None or (day.month, day.day) not in QUARTER_ENDS:
            raise BadRequest(_text(parameter, raw))
        return day
    if kind == "positive_int":
        return _whole_number_in(parameter, raw, 1, None)
    if kind == "positive_ints":
        numbers = []
        for piece in raw.split(","):
            number = _whole_number(piece.strip())
            if number is None or number < 1 or "." in piece:
                raise BadRequest(_text(parameter, piece.strip()))
            numbers.append(number)
        return list(dict.fromkeys(numbers))
    if kind == "text":
        if parameter.min_length and len(raw.strip()) < parameter.min_length:
            raise BadRequest(_text(parameter, raw))
        return raw.strip()
    if kind == "limit":
        return _whole_number_in(parameter, raw, 1, MAX_LIMIT_VALUE)
    if kind == "offset":
        return _whole_number_in(parameter, raw, 0, None)
    if kind == "fields":
        return [name.strip() for name in raw.split(",") if name.strip()]
    return raw  # cursor (decoded by api.paging), key (read by api.auth)


def _date(parameter: Parameter, raw: str) -> dt.date:
    day = _real_date(raw)
    if day is None and parameter.format_error:
        raise BadRequest(parameter.format_error.format(value=raw, name=parameter.name))
    if (
        day is None
        or (parameter.min and day < parameter.min)
        or (parameter.max and day > parameter.max)
    ):
        raise BadRequest(_text(parameter, raw))
    return day


def _real_date(raw: str) -> dt.date | None:
    if DATE_PATTERN.fullmatch(raw) is None:
        return None
    try:
        return dt.date.fromisoformat(raw)
    except ValueError:
        return None


def _whole_number(raw: str) -> int | None:
    """A whole number as the spec reads it: ``50`` and ``50.0`` are 50; ``5e1`` and ``50.5`` not.
    Every integer parameter is one: none is in range past a signed 64-bit integer (the
    database's), so a larger one is the parameter's 400 (never read as digits past that)."""
    if WHOLE_NUMBER.fullmatch(raw) is None:
        return None
    digits = raw.split(".")[0].lstrip("+").lstrip("0") or "0"
    if len(digits) > len(str(LARGEST_WHOLE_NUMBER)):
        return None
    number = int(digits)
    return number if number <= LARGEST_WHOLE_NUMBER else None


def _whole_number_in(parameter: Parameter, raw: str, low: int, high: int | None) -> int:
    """``raw`` as a whole number from ``low`` to ``high`` (no bound: None), else the 400."""
    number = _whole_number(raw)
    if number is None or number < low or (high is not None and number > high):
        raise BadRequest(_text(parameter, raw))
    return number


def _text(parameter: Parameter, value: str, fallback: str | None = None) -> str:
    template = parameter.error or fallback or f"Invalid {parameter.name}: '{value}'"
    return template.format(
        value=value,
        name=parameter.name,
        min=parameter.min.isoformat() if parameter.min else "",
        max=parameter.max.isoformat() if parameter.max else "",
    )


def _check_window(params: RequestParams) -> None:
    start, end = params.get("start"), params.get("end")
    if isinstance(start, dt.date) and isinstance(end, dt.date) and end < start:
        raise BadRequest(f"end ({end.isoformat()}) is before start ({start.isoformat()})")
