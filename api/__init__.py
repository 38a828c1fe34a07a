"""The HTTP service (FastAPI): routes generated from contracts/endpoints. Built in issue 4."""
