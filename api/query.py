"""SQL built with sqlglot from a contract and validated values, run on a version's DuckDB.

User input never becomes SQL text: every value is a named placeholder (``$p0``…) bound by DuckDB.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import duckdb
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from findata.api.time_limits import run_query
from findata.contracts.endpoints import OrderTerm

# Load sqlglot's DuckDB dialect now, while the app is made, not in the first request threads:
# sqlglot registers a dialect class before it sets the class's generator, so a thread that asks
# for "duckdb" while another is still importing it gets the default generator (``:name``
# placeholders, which DuckDB cannot parse), and the SQL built once per shape kept that text
# (500s on one worker's first concurrent requests, seen under test_quota_concurrency).
DUCKDB = Dialect.get_or_raise("duckdb")


class Binder:
    """Collects the values of one query; each call returns the placeholder standing for one."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def __call__(self, value: Any) -> exp.Placeholder:
        name = f"p{len(self.values)}"
        self.values[name] = value
        return exp.Placeholder(this=name)

    def each(self, values: Iterable[Any]) -> list[exp.Placeholder]:
        """One placeholder per value (for ``IN`` lists)."""
        return [self(value) for value in values]


def slot(name: str) -> exp.Placeholder:
    """A named placeholder (``$name``) for SQL built once per shape of request: the values are
    bound by name on each request, so the text never depends on them."""
    return exp.Placeholder(this=name)


def column(name: str, table: str | None = None) -> exp.Column:
    """A column reference."""
    return exp.column(name, table=table)


def order_by(terms: Sequence[OrderTerm], table: str | None = None) -> list[exp.Ordered]:
    """The ORDER BY of a contract's row order."""
    return [
        exp.Ordered(this=column(term.column, table), desc=term.descending, nulls_first=False)
        for term in terms
    ]


def fetch_dicts(
    cursor: duckdb.DuckDBPyConnection, query: exp.Expression, binder: Binder
) -> list[dict[str, Any]]:
    """Run ``query`` (within the request's time limits) and return its rows as dicts in column
    order."""
    return fetch_dicts_of_sql(cursor, query.sql(dialect="duckdb"), binder.values)


def fetch_dicts_of_sql(
    cursor: duckdb.DuckDBPyConnection, sql: str, values: dict[str, Any]
) -> list[dict[str, Any]]:
    """Run SQL text built once per shape (see :func:`slot`) with this request's ``values``."""
    names, rows = run_query(cursor, sql, values)
    return [dict(zip(names, row, strict=True)) for row in rows]


def fetch_all(
    cursor: duckdb.DuckDBPyConnection, query: exp.Expression, binder: Binder
) -> list[tuple[Any, ...]]:
    """Run ``query`` (within the request's time limits) and return its rows as tuples."""
    return run_query(cursor, query.sql(dialect="duckdb"), binder.values)[1]
