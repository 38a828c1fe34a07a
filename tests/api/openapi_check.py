"""Checking a real response against the served OpenAPI document: its body against the schema of
its route and status, its headers from the spec's table against the ones documented there."""

from __future__ import annotations

import re
from functools import cached_property
from typing import Any

import httpx
from jsonschema import Draft202012Validator

#: the headers of the spec's "Response headers" table and client notices, and the request id
SPEC_HEADERS = {
    "x-ratelimit-limit-day", "x-ratelimit-remaining-day", "x-ratelimit-limit-hour",
    "x-ratelimit-remaining-hour", "x-data-floor", "x-rows-today", "x-entities-today", "age",
    "x-service-client-latest", "x-service-client-update", "x-service-client-update-message",
    "warning", "x-request-id",
}  # fmt: skip


class OpenApiDocument:
    """The served document, with the route template of a concrete path."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.checked: dict[tuple[str, int], int] = {}

    @cached_property
    def _templates(self) -> list[tuple[re.Pattern[str], str]]:
        patterns = []
        for template in self.document["paths"]:
            if template.startswith("/v1/"):
                parts = re.split(r"\{\w+\}", template)
                pattern = "[^/]+".join(re.escape(part) for part in parts)
                patterns.append((re.compile(pattern), template))
        # literal paths before templated ones (/v1/prices before /v1/prices/{tickers})
        return sorted(patterns, key=lambda item: item[1].count("{"))

    def template_of(self, path: str) -> str:
        """The route template a concrete ``/v1/`` path is served by."""
        for pattern, template in self._templates:
            if pattern.fullmatch(path):
                return template
        raise AssertionError(f"no documented route for {path}")

    def check(self, response: httpx.Response) -> None:
        """Fail unless the response's status, body and spec headers are as documented."""
        template = self.template_of(response.request.url.path)
        documented = self.document["paths"][template]["get"]["responses"]
        status = str(response.status_code)
        assert status in documented, (template, status, response.text)
        answer = documented[status]
        schema = answer["content"]["application/json"]["schema"]
        validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
        problems = [
            f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(response.json())
        ]
        assert not problems, (str(response.request.url), status, problems[:5])
        named = {name.lower() for name in answer.get("headers", {})}
        sent = {name.lower() for name in response.headers} & SPEC_HEADERS
        assert sent <= named, (template, status, sent - named)
        key = (template, response.status_code)
        self.checked[key] = self.checked.get(key, 0) + 1
