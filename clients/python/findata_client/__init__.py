"""findata-python: the Python client of the findata API.

``Client`` / ``AsyncClient`` have one method per endpoint (generated from the contracts), plus
``get`` and ``paginate``; every error response raises a ``FindataError`` subclass of
``findata_client.errors``; the service's warnings are ``FindataWarning``s. ``Replica`` keeps a
local DuckDB file current from the change feed (the ``[replica]`` extra); ``webhooks.verify``
checks a delivery's signature.

Logging: the ``findata_client`` logger says what costs time: each wait before a request is sent
again, with its reason (WARNING), and each page fetched (INFO). It has only a ``NullHandler``;
configure logging to see it (``logging.basicConfig(level=logging.INFO)``).
"""

import logging

from findata_client import errors
from findata_client._version import __version__
from findata_client.client import AsyncClient, Client
from findata_client.errors import FindataConnectionError, FindataError
from findata_client.fetched import RowList
from findata_client.notices import FindataWarning, OutdatedClientWarning, PartialResultWarning
from findata_client.replica import Replica
from findata_client.results import AsyncRows, Page, Rows

# a library's logger: silent until the application configures logging
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "AsyncClient",
    "AsyncRows",
    "Client",
    "FindataConnectionError",
    "FindataError",
    "FindataWarning",
    "OutdatedClientWarning",
    "Page",
    "PartialResultWarning",
    "Replica",
    "RowList",
    "Rows",
    "__version__",
    "errors",
]
