"""Rows as typed tables: an Arrow table or a pandas DataFrame, each column typed by the field's
contract type where a dataset contract gives one (``Field.type``), inferred otherwise.

=========== ===================== ==================================================
contract    Arrow                 pandas
=========== ===================== ==================================================
BIGINT      int64                 int64 (Int64 when the field may be null)
INTEGER     int32                 int32 (Int32 when the field may be null)
DOUBLE      float64               float64
BOOLEAN     bool                  bool (boolean when the field may be null)
DATE        date32                datetime64[ns]
TIMESTAMP   timestamp[us, UTC]    datetime64[ns, UTC]
VARCHAR     string                string
(none)      inferred              inferred (nested values as objects)
=========== ===================== ==================================================

Columns are those of the rows, in the first row's order; with no rows, the endpoint's fields. A
date-indexed frame has the endpoint's date column as its index.
pandas and pyarrow are imported only here, when a table is asked for (optional extras).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from findata_client.endpoints import Field

if TYPE_CHECKING:
    import pandas
    import pyarrow

Row = dict[str, Any]

_PANDAS_TYPES = {
    "BIGINT": ("int64", "Int64"),
    "INTEGER": ("int32", "Int32"),
    "DOUBLE": ("float64", "float64"),
    "BOOLEAN": ("bool", "boolean"),
    "VARCHAR": ("string", "string"),
}


def columns_of(rows: Sequence[Row], fields: Sequence[Field]) -> list[str]:
    """The column names: every key of the rows, in the order first seen; with no rows, the
    endpoint's fields."""
    if not rows:
        return [f.name for f in fields]
    return list(dict.fromkeys(name for row in rows for name in row))


def to_arrow(rows: Sequence[Row], fields: Sequence[Field]) -> pyarrow.Table:
    """The rows as an Arrow table."""
    import pyarrow as pa

    types = {f.name: f.type for f in fields}
    columns = {
        name: _arrow_array([row.get(name) for row in rows], types.get(name))
        for name in columns_of(rows, fields)
    }
    return pa.table(columns)


def _arrow_array(values: list[Any], duck_type: str | None) -> pyarrow.Array:
    import pyarrow as pa

    typed = {
        "BIGINT": pa.int64(),
        "INTEGER": pa.int32(),
        "DOUBLE": pa.float64(),
        "BOOLEAN": pa.bool_(),
        "VARCHAR": pa.string(),
    }
    try:
        if duck_type == "DATE":
            return pa.array([_date(v) for v in values], pa.date32())
        if duck_type == "TIMESTAMP":
            return pa.array([_timestamp(v) for v in values], pa.timestamp("us", tz="UTC"))
        if duck_type == "VARCHAR":
            return pa.array([_text(v) for v in values], pa.string())
        if duck_type in typed:
            return pa.array(values, typed[duck_type])
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError):
        # a value the contract's type (or inference) cannot hold: keep it, as JSON text
        return pa.array([_text(v) for v in values], pa.string())


def to_pandas(
    rows: Sequence[Row], fields: Sequence[Field], date_index: str | None = None
) -> pandas.DataFrame:
    """The rows as a pandas DataFrame; with ``date_index``, indexed by that date column (a
    ``DatetimeIndex``, the rows kept in their order)."""
    import pandas as pd

    by_name = {f.name: f for f in fields}
    columns = columns_of(rows, fields)
    data = {
        name: _pandas_series([row.get(name) for row in rows], by_name.get(name)) for name in columns
    }
    frame = pd.DataFrame(data, columns=columns)
    return frame.set_index(date_index) if date_index else frame


def _pandas_series(values: list[Any], field: Field | None) -> pandas.Series:
    import pandas as pd

    duck_type = field.type if field else None
    try:
        if duck_type in ("DATE", "TIMESTAMP"):
            utc = duck_type == "TIMESTAMP"
            parsed = pd.to_datetime(pd.Series(values, dtype=object), format="ISO8601", utc=utc)
            return pd.Series(parsed).astype("datetime64[ns, UTC]" if utc else "datetime64[ns]")
        if duck_type in _PANDAS_TYPES:
            strict, nullable = _PANDAS_TYPES[duck_type]
            has_null = any(v is None for v in values)
            dtype = nullable if (field is None or field.nullable or has_null) else strict
            cells = [_text(v) for v in values] if duck_type == "VARCHAR" else values
            return pd.Series(cells, dtype=dtype)
    except (ValueError, TypeError, OverflowError):
        # a value the contract's type cannot hold: keep the column as the values are
        return pd.Series(values, dtype=object)
    return pd.Series(values, dtype=None if values else object)


def _date(value: Any) -> dt.date | None:
    if value is None or isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def _timestamp(value: Any) -> dt.datetime | None:
    if value is None or isinstance(value, dt.datetime):
        return value
    parsed = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)
