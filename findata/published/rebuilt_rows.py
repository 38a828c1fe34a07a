"""The rows an incremental mart's build recomputed, as a condition on the mart's rows.

An incremental mart's pre-hook keeps what it deletes and appends again as ``<mart>__rebuilt``,
beside it, in the mart's own transaction (``transforms/macros/rebuilt_rows.sql``): a column
named for a mart column holds the values whose rows were rebuilt (a filing's accession, an
issuer), a column ``<column>__from`` the first value of that column rebuilt (prices: per
security, the first date). Every other row is as the build before left it. A first or full
build drops the table.

So when the warehouse held exactly the current version's rows before this run's build
(``build_inputs.comparable_version``), the rows that differ from that version are among
the rows this condition selects, on either side: the changed-rows check and the publish diff
read those alone. The condition may select more (a security's rows from the earliest first
date of any security rebuilt), never less.
"""

from __future__ import annotations

import duckdb

REBUILT_SUFFIX = "__rebuilt"
FROM_SUFFIX = "__from"


def rebuilt_rows_condition(
    con: duckdb.DuckDBPyConnection, catalog: str, schema: str, mart: str
) -> str | None:
    """The rows of mart ``<catalog>.<schema>.<mart>`` its last build recomputed, as a SQL
    condition on its columns (and on those of a published version of its dataset); None when
    the mart keeps no ``<mart>__rebuilt`` table (not incremental, or last built whole)."""
    table = f"{mart}{REBUILT_SUFFIX}"
    columns = [
        column
        for (column,) in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_catalog = ? "
            "AND table_schema = ? AND table_name = ? ORDER BY ordinal_position",
            [catalog, schema, table],
        ).fetchall()
    ]
    if not columns:
        return None
    rebuilt = f'"{catalog}"."{schema}"."{table}"'
    conditions = []
    for column in columns:
        if column.endswith(FROM_SUFFIX):
            named = column.removesuffix(FROM_SUFFIX)
            conditions.append(f'"{named}" >= (SELECT min("{column}") FROM {rebuilt})')
        else:
            conditions.append(f'"{column}" IN (SELECT "{column}" FROM {rebuilt})')
    return " AND ".join(conditions)
