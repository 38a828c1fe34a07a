"""The single source of truth, as YAML, and the small pydantic loader that validates it.

This package depends on nothing else of findata's.
"""
