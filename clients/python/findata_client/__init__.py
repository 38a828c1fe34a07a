"""findata-python: the Python client of the findata API.

``Client`` / ``AsyncClient`` have one method per endpoint (generated from the contracts), plus
``get`` and ``paginate``; every error response raises a ``FindataError`` subclass of
``findata_client.errors``; the service's warnings are ``FindataWarning``s.
"""

from findata_client import errors
from findata_client._version import __version__
from findata_client.client import AsyncClient, Client
from findata_client.errors import FindataConnectionError, FindataError
from findata_client.notices import FindataWarning, OutdatedClientWarning
from findata_client.results import AsyncRows, Page, Rows

__all__ = [
    "AsyncClient",
    "AsyncRows",
    "Client",
    "FindataConnectionError",
    "FindataError",
    "FindataWarning",
    "OutdatedClientWarning",
    "Page",
    "Rows",
    "__version__",
    "errors",
]
