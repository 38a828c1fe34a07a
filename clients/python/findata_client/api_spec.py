"""The spec a client runs on: what the contracts say to it, as ``generate.py`` writes it into
``findata_client.spec`` (``SPEC``). The hand-written parts (transport, base client) are given a
spec and import no generated module: imports point one way, from the generated modules to these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from findata_client.base_errors import FindataError, error_from_response
from findata_client.endpoints import EndpointInfo, endpoint_for_path

if TYPE_CHECKING:
    import httpx


@dataclass(frozen=True)
class ApiSpec:
    """Every endpoint by contract name, and the exception class of every error code."""

    endpoints: Mapping[str, EndpointInfo]
    errors: Mapping[str, type[FindataError]]

    def endpoint(self, name: str) -> EndpointInfo:
        """The endpoint of the contract ``name``."""
        return self.endpoints[name]

    def endpoint_for_path(self, path: str) -> EndpointInfo | None:
        """The endpoint serving ``path`` (a path or URL), or None for a path no contract has
        (read as one page)."""
        try:
            return endpoint_for_path(path, self.endpoints)
        except ValueError:
            return None

    def error_from_response(self, response: httpx.Response) -> FindataError:
        """The exception of an error response: the class of its body's ``code``."""
        return error_from_response(response, self.errors)
