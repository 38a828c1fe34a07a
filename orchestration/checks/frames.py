"""Reading a mart (or a slice of it) from DuckDB into the pandas frame GE validates.

DuckDB's own conversion (``relation.df()``) sets each column's pandas dtype (numpy ints, pandas'
nullable ints when there are nulls, ``datetime64`` for DATE and TIMESTAMP), but it builds text
columns slowly (about 5 s per 13.7 M-row text column). So one query is run into Arrow; text
columns are converted by Arrow (the same pandas ``str`` dtype, 10x faster) and every other
column by DuckDB scanning that Arrow table. One query means one snapshot, and a sample stays the
same sample for every column.
"""

from __future__ import annotations

import duckdb
import pandas as pd
import pyarrow as pa


def _is_text(data_type: pa.DataType) -> bool:
    return bool(
        pa.types.is_string(data_type)
        or pa.types.is_large_string(data_type)
        or pa.types.is_string_view(data_type)
    )


def quote(identifier: str) -> str:
    """A DuckDB identifier, double-quoted."""
    return '"' + identifier.replace('"', '""') + '"'


def read_frame(con: duckdb.DuckDBPyConnection, sql: str) -> pd.DataFrame:
    """The result of ``sql`` as a pandas frame with DuckDB's dtypes, in the query's column order."""
    result = con.sql(sql).arrow()
    table = result.read_all() if isinstance(result, pa.RecordBatchReader) else result
    names = table.schema.names
    text = [f.name for f in table.schema if _is_text(f.type)]
    others = [name for name in names if name not in text]
    columns: dict[str, pd.Series] = {}
    if others:
        converted = con.from_arrow(table.select(others)).df()
        columns.update({name: converted[name] for name in others})
    for name in text:
        columns[name] = pd.Series(table.column(name).to_pandas(), name=name)
    return pd.DataFrame(
        {name: columns[name] for name in names}, index=pd.RangeIndex(table.num_rows)
    )
