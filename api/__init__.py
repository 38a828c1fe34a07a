"""The HTTP service (FastAPI): the front door (methods, keys, errors), then the /v1/ routes."""
