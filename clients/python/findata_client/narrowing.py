"""What to tell a user whose request was too big for the service: a 504 that ran past the time
limit ("narrow the date range or ticker list") and a query stopped at the plan's page limit
("narrow the query or split by date or ticker"), each said for the request at hand (spec,
"Errors"). The texts go on the error as notes (``BaseException.add_note``), which a traceback
shows under the message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from findata_client.endpoints import EndpointInfo, path_values

#: the names of a request's subjects: tickers in the path, or entity ids
_SUBJECTS = ("tickers", "ticker", "entity_id")


def _subjects(endpoint: EndpointInfo, path: str, query: Mapping[str, str]) -> str | None:
    """The request's ticker or entity id list, if it has one."""
    values = {**path_values(endpoint, path), **query}
    found = next((values[name] for name in _SUBJECTS if values.get(name)), None)
    return unquote(found) if found else None


def how_to_narrow(endpoint: EndpointInfo | None, path: str, query: Mapping[str, str]) -> str:
    """The ways to narrow this request: its date range and its ticker list, as they are now."""
    if endpoint is None:
        return "a shorter date range or fewer tickers"
    ways = []
    if "start" in endpoint.parameters or "end" in endpoint.parameters:
        now = ", ".join(f"{name}={query[name]}" for name in ("start", "end") if query.get(name))
        ways.append(f"a shorter date range (start/end; now {now or 'the whole history'})")
    subjects = _subjects(endpoint, path, query)
    if subjects is not None:
        count = len([s for s in subjects.split(",") if s])
        ways.append(f"fewer tickers or entity ids (now {count})")
    return " or ".join(ways) or "fewer rows (a narrower query)"


def timeout_note(endpoint: EndpointInfo | None, path: str, query: Mapping[str, str]) -> str:
    """The note on a 504 of ``endpoint`` (None: a path no contract has): not resent, and how
    to narrow it before sending it again."""
    return (
        "Not sent again unchanged: on a 504 the spec recommends narrowing the request first. "
        f"Narrow it ({how_to_narrow(endpoint, path, query)}), then send it again."
    )


def page_limit_note(
    endpoint: EndpointInfo | None,
    path: str,
    query: Mapping[str, str],
    fetched: int,
    pages: int,
    last_row: Mapping[str, Any] | None,
) -> str:
    """The note on a ``pagination_limit_reached`` met while paging: what was fetched, where it
    is, and how to get the rest (bigger pages, a narrower query, or the query split)."""
    lines = [
        f"{fetched:,} rows of {pages} pages were fetched before the limit: the error's .rows "
        "holds them, and to_list(), to_pandas() and to_arrow() return them with "
        "allow_partial=True."
    ]
    limit = int(query.get("limit") or (endpoint.default_limit if endpoint else 0) or 0)
    if endpoint and endpoint.max_limit and limit and limit < endpoint.max_limit:
        lines.append(
            f"Bigger pages reach further: pass limit={endpoint.max_limit} (the most a page of "
            f"{endpoint.name} holds; these pages held {limit})."
        )
    lines.append(
        f"Or narrow the query ({how_to_narrow(endpoint, path, query)}), or split it by date or "
        "ticker."
    )
    date_field = endpoint.date_field if endpoint else None
    if last_row is not None and date_field and last_row.get(date_field) is not None:
        where = f"{date_field} {last_row[date_field]}"
        if last_row.get("entity_id") is not None:
            where = f"entity_id {last_row['entity_id']}, {where}"
        lines.append(f"The rows fetched end at {where}.")
    return " ".join(lines)
