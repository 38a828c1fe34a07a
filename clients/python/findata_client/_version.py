"""The client's version: sent in ``User-Agent: findata-python/<version>``."""

__version__ = "1.0.0"
