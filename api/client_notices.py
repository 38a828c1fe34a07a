"""Client version notices (spec "Versioning"): a request whose ``User-Agent`` names the findata
Python client older than the recommended version gets four headers saying so, on the responses
the spec lists and no others."""

from __future__ import annotations

import re

CLIENT = re.compile(r"findata-python/(\d+)\.(\d+)\.(\d+)")

#: error codes of data endpoints whose answers carry the notice (400, 402, 404, 409, and the
#: hourly, daily and row-allowance 429s)
NOTICED_ERRORS = frozenset(
    {
        "bad_request",
        "pagination_limit_reached",
        "upgrade_required",
        "not_found",
        "ambiguous_ticker",
        "burst_limit_reached",
        "rate_limit_exceeded",
        "daily_limit_reached",
        "hourly_usage_limit",
        "row_limit_exceeded",
    }
)


def _version(text: str) -> tuple[int, int, int]:
    major, minor, patch = (int(part) for part in text.split("."))
    return major, minor, patch


def notice_headers(user_agent: str | None, latest: str) -> dict[str, str]:
    """The notice headers for ``user_agent``: empty unless it names an older findata-python."""
    found = CLIENT.search(user_agent or "")
    if found is None:
        return {}
    used = ".".join(found.groups())
    if _version(used) >= _version(latest):
        return {}
    message = (
        f"findata-python {used} is outdated; the recommended version is {latest}. "
        f"Upgrade with: pip install --upgrade 'findata-python>={latest}'"
    )
    return {
        "X-Service-Client-Latest": latest,
        "X-Service-Client-Update": "true",
        "X-Service-Client-Update-Message": message,
        "Warning": f'299 findata "{message}"',
    }
