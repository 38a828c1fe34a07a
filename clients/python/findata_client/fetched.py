"""Rows fetched and held in memory: ``RowList``, what an awaited ``AsyncRows``, ``to_list()``
and an error that stopped a result's paging (``error.rows``) give; and the short printed form
of a result (its count and a few rows), which ``Rows`` and ``AsyncRows`` share.
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any

from findata_client.endpoints import EndpointInfo
from findata_client.frames import to_arrow, to_pandas

if TYPE_CHECKING:
    import pandas
    import pyarrow

Row = dict[str, Any]
#: rows and fields a printed result shows
SHOWN_ROWS = 3
SHOWN_FIELDS = 8
# a value's short text (Python 3.11's Repr takes its limits as attributes, not arguments)
_values = reprlib.Repr()
_values.maxstring = _values.maxother = 40
_values.maxlist = _values.maxdict = 4


def _row_text(row: Mapping[str, Any]) -> str:
    shown = ", ".join(
        f"{name!r}: {_values.repr(value)}" for name, value in islice(row.items(), SHOWN_FIELDS)
    )
    return "{" + shown + (", ...}" if len(row) > SHOWN_FIELDS else "}")


def printed(head: str, rows: Sequence[Row], total: int | None) -> str:
    """A result as printed: ``<head>``, then its first rows, one a line, and how many more
    (``total``: every row's count, when known)."""
    lines = [f"<{head}>", *(f"  {_row_text(row)}" for row in rows[:SHOWN_ROWS])]
    if total is not None and total > SHOWN_ROWS:
        lines.append(f"  ... {total - SHOWN_ROWS:,} more")
    return "\n".join(lines)


def date_column(endpoint: EndpointInfo | None, date_index: bool) -> str | None:
    """The column a date-indexed frame is indexed by (None without ``date_index``)."""
    if not date_index:
        return None
    if endpoint is None or endpoint.date_field is None:
        name = endpoint.name if endpoint else "these"
        raise ValueError(f"{name} rows have no date to index a frame by")
    return endpoint.date_field


class RowList(list[Row]):
    """Every row fetched, as a list of dicts, with where they came from: ``endpoint``, the first
    page's ``meta``, the pages' ``warnings``, how many ``pages`` they took, and ``complete``
    (False when an error stopped the paging before its last page)."""

    def __init__(
        self,
        rows: Iterable[Row] = (),
        *,
        endpoint: EndpointInfo | None = None,
        meta: Mapping[str, Any] | None = None,
        warnings: Iterable[str] = (),
        pages: int = 0,
        complete: bool = True,
    ) -> None:
        super().__init__(rows)
        self.endpoint = endpoint
        self.meta = dict(meta or {})
        self.warnings = list(warnings)
        self.pages = pages
        self.complete = complete

    def to_pandas(self, *, date_index: bool = False) -> pandas.DataFrame:
        """The rows as a DataFrame typed by the endpoint's contract (``frames``);
        ``date_index``: indexed by the endpoint's date column (prices' ``date``, fundamentals'
        ``period_end``, ...), in the rows' order (dates repeat across securities)."""
        fields = self.endpoint.fields if self.endpoint else ()
        return to_pandas(self, fields, date_column(self.endpoint, date_index))

    def to_arrow(self) -> pyarrow.Table:
        """The rows as an Arrow table typed by the endpoint's contract (``frames``)."""
        return to_arrow(self, self.endpoint.fields if self.endpoint else ())

    def __repr__(self) -> str:
        name = self.endpoint.name if self.endpoint else "rows"
        stop = "" if self.complete else ", stopped before the last page"
        head = f"RowList of {name}: {len(self):,} rows from {self.pages} page(s){stop}"
        return printed(head, self, len(self))
