"""Request parameters as the API reads them: values written as query text, and paths filled in
from their templates."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

#: a date parameter: a ``datetime.date`` or its ``YYYY-MM-DD`` text
DateLike = dt.date | str
#: a comma list of names (tickers, fields): one string (``"AAPL,MSFT"``) or a sequence of them
Names = str | Sequence[str]
#: a comma list of ids: one id, its text (``"1,2"``) or a sequence of them
Ids = int | str | Sequence[int | str]
#: the query parameter the service also reads a key from: its value is never shown
KEY_PARAMETER = "api_key"


def encode_value(value: Any) -> str | None:
    """A parameter value as query text: dates as ``YYYY-MM-DD``, flags as ``true``/``false``,
    sequences as comma lists; None for an absent value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence | set | frozenset):
        parts = [encode_value(item) for item in value]
        return ",".join(part for part in parts if part is not None)
    return str(value)


def encode_params(params: Mapping[str, Any] | None) -> dict[str, str]:
    """The query of ``params``: every value encoded, absent and empty values dropped."""
    encoded = {name: encode_value(value) for name, value in (params or {}).items()}
    return {name: value for name, value in encoded.items() if value}


def split_target(path_or_url: str) -> tuple[str, dict[str, str]]:
    """A path or URL without its query string, and that query's parameters (empty values
    kept, for the caller's merge to drop)."""
    parts = urlsplit(path_or_url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")), query


def fill_path(templates: Sequence[str], values: Mapping[str, Any]) -> str:
    """The first template whose placeholders are exactly the given (non-None) values, filled
    in with each value encoded and URL-quoted (commas kept: they separate tickers)."""
    given = {name: encode_value(value) for name, value in values.items()}
    present = {name for name, value in given.items() if value}
    for template in templates:
        names = {part[1:-1] for part in template.split("/") if part.startswith("{")}
        if names == present:
            return template.format(**{n: quote(str(given[n]), safe=",") for n in names})
    raise TypeError(
        f"no path of {list(templates)} takes exactly {sorted(present) or 'no path values'}"
    )


def shown_request(path: str, query: Mapping[str, str]) -> str:
    """A request as logs and printed results show it: its path and query, a key's value
    hidden."""
    shown = {name: "***" if name == KEY_PARAMETER else value for name, value in query.items()}
    return f"{path}?{urlencode(shown, safe=',*')}" if shown else path
