"""Reads on the request path through the DBAPI cursor, for the two the API makes on every
request (the key's row, the current version's id).

A SQLAlchemy Core execution costs ~90 µs on SQLite, of which the database's own work is ~3 µs:
the rest is the statement's cache key, the execution context and the result's type
processing, paid again on every request. A ``RawRead`` compiles its statement once for the
engine's dialect and runs it on a pooled DBAPI connection (``Engine.raw_connection``, the
pool's checkout and reset as usual), returning the driver's own values: callers compare them
or read integers, and take the typed SQLAlchemy path when they need the values themselves.
On PostgreSQL the read runs in autocommit (one round trip instead of three).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa


class RawRead:
    """``statement`` (a select with named ``bindparam``s) compiled once for ``engine``."""

    def __init__(self, engine: sa.Engine, statement: sa.Select[Any]) -> None:
        compiled = statement.compile(dialect=engine.dialect)
        self._engine = engine
        self._sql = str(compiled)
        self._positions = compiled.positiontup if compiled.positional else None
        self.columns = [column.name for column in statement.selected_columns]
        # on PostgreSQL a read outside autocommit is three round trips (BEGIN, the query,
        # the pool's ROLLBACK on return); in autocommit it is one, and psycopg may prepare it
        self._autocommit = engine.dialect.name == "postgresql"

    def first(self, **values: Any) -> tuple[Any, ...] | None:
        """The first row, as the driver returns it (None when there is none)."""
        bound: Any = values if self._positions is None else [values[n] for n in self._positions]
        connection = self._engine.raw_connection()
        try:
            if self._autocommit:
                connection.driver_connection.autocommit = True  # type: ignore[union-attr]
            cursor = connection.cursor()
            try:
                cursor.execute(self._sql, bound)
                row = cursor.fetchone()
            finally:
                cursor.close()
                if self._autocommit:
                    connection.driver_connection.autocommit = False  # type: ignore[union-attr]
        finally:
            connection.close()  # back to the pool, which resets it
        return None if row is None else tuple(row)
