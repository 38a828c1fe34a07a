"""What the client knows of each endpoint (``EndpointInfo``, its fields ``Field``), and which
endpoint a request path is.

The table itself, ``ENDPOINTS``, is generated from the endpoint contracts into
``findata_client.spec``, which imports these types; nothing here imports it (the lookup takes
the table: ``api_spec.ApiSpec`` holds it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

Paging = Literal["cursor", "offset", "none"]


@dataclass(frozen=True)
class Field:
    """A response field: its DuckDB type from a dataset contract (None when no contract types
    it) and whether it may be null."""

    name: str
    type: str | None
    nullable: bool = True


@dataclass(frozen=True)
class EndpointInfo:
    """One endpoint contract, as much of it as a client needs.

    ``paging`` is the contract's paging kind; ``feed`` names the parameter a feed is read on
    through (``since`` on the change feed, whose responses are not paged but continue from
    ``meta.next_cursor``). ``parameters`` are the query parameters the endpoint reads.
    ``date_field``: the first date column of the row order (a frame's date index), if any.
    """

    name: str
    paths: tuple[str, ...]
    paging: Paging
    default_limit: int | None
    max_limit: int | None
    fields: tuple[Field, ...]
    key: Literal["required", "optional", "never"]
    parameters: tuple[str, ...] = ()
    feed: str | None = None
    date_field: str | None = None

    @property
    def field_types(self) -> dict[str, Field]:
        """The fields by name."""
        return {f.name: f for f in self.fields}


def _segments(path: str) -> list[str]:
    return [part for part in path.split("/") if part]


def _matches(template: list[str], segments: list[str]) -> bool:
    """Whether the path's last segments fit the template (a base URL may add a prefix)."""
    if len(segments) < len(template):
        return False
    tail = segments[len(segments) - len(template) :]
    return all(t.startswith("{") or t == s for t, s in zip(template, tail, strict=True))


def path_values(endpoint: EndpointInfo, path: str) -> dict[str, str]:
    """The values a path gives the endpoint's placeholders (``{"tickers": "AAPL,MSFT"}`` of
    ``/v1/prices/AAPL,MSFT``); empty when none of its paths fits."""
    segments = _segments(urlsplit(path).path)
    for template in sorted(map(_segments, endpoint.paths), key=len, reverse=True):
        if _matches(template, segments):
            tail = segments[len(segments) - len(template) :]
            return {t[1:-1]: s for t, s in zip(template, tail, strict=True) if t.startswith("{")}
    return {}


def endpoint_for_path(path: str, endpoints: Mapping[str, EndpointInfo]) -> EndpointInfo:
    """The endpoint of ``endpoints`` serving ``path`` (a path, or a URL; any query string is
    ignored), e.g. ``/v1/prices/AAPL`` -> prices, ``/v1/index/sp500/events`` -> index_events.

    Raises ``ValueError`` for a path no endpoint contract has.
    """
    segments = _segments(urlsplit(path).path)
    best: tuple[int, EndpointInfo] | None = None
    for endpoint in endpoints.values():
        for template in map(_segments, endpoint.paths):
            if _matches(template, segments):
                literal = sum(not part.startswith("{") for part in template)
                if best is None or literal > best[0]:
                    best = (literal, endpoint)
    if best is None:
        raise ValueError(f"no endpoint of the API has the path {path!r}")
    return best[1]
