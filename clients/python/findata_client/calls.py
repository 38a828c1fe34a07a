"""What the generated endpoint methods call: a request for one endpoint, answered as a body
(resolve, status, usage) or as a result of rows across pages (every list endpoint).

``Client`` and ``AsyncClient`` implement these; the generated mixins
(``findata_client._generated``) build each endpoint's path values and query from its typed
parameters and hand them here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from findata_client.results import AsyncRows, Rows


class SyncCalls(ABC):
    """The two calls behind ``Client``'s endpoint methods."""

    @abstractmethod
    def _call_body(
        self, endpoint: str, path: Mapping[str, Any], query: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The whole body of a one-response endpoint."""

    @abstractmethod
    def _call_rows(self, endpoint: str, path: Mapping[str, Any], query: Mapping[str, Any]) -> Rows:
        """The rows of a list endpoint, across its pages."""


class AsyncCalls(ABC):
    """The two calls behind ``AsyncClient``'s endpoint methods."""

    @abstractmethod
    async def _call_body(
        self, endpoint: str, path: Mapping[str, Any], query: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The whole body of a one-response endpoint."""

    @abstractmethod
    def _call_rows(
        self, endpoint: str, path: Mapping[str, Any], query: Mapping[str, Any]
    ) -> AsyncRows:
        """The rows of a list endpoint, across its pages (fetched when read)."""
