"""findata-python: the Python client of the findata API.

``Client`` / ``AsyncClient`` have one method per endpoint (generated from the contracts), plus
``get`` and ``paginate``; every error response raises a ``FindataError`` subclass of
``findata_client.errors``; the service's warnings are ``FindataWarning``s. ``Replica`` keeps a
local DuckDB file current from the change feed (the ``[replica]`` extra); ``webhooks.verify``
checks a delivery's signature.
"""

from findata_client import errors
from findata_client._version import __version__
from findata_client.client import AsyncClient, Client
from findata_client.errors import FindataConnectionError, FindataError
from findata_client.notices import FindataWarning, OutdatedClientWarning
from findata_client.replica import Replica
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
    "Replica",
    "Rows",
    "__version__",
    "errors",
]
