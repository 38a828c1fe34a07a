"""A dataset's rows held in memory per version and entity, each already serialised to JSON.

The hot request of a data API is one security's dated rows over a window. Asking DuckDB for
them costs ~2 ms, most of it turning values into Python objects that orjson then turns into
text again. The store asks DuckDB once per (version, dataset, entity, row shape) for every row
of the entity in the contract's order, keeps each row as an ``orjson.Fragment`` (its JSON text,
which orjson copies into an answer as is) with the rows' dates beside them, and answers a window
with two binary searches and a slice. The row shape is whatever makes two requests' rows differ
apart from their window (for prices: the fields asked for, and the split adjustment), so a
client that names its fields is served from memory too, from an entry of its own.

A published version never changes, so an entry is never stale: it is dropped when its version
is closed or when the store passes its byte budget (least recently used first). Each worker
process has its own store; the budget is a setting (``FINDATA_ROW_STORE_MB``, 0 turns it off).
"""

from __future__ import annotations

import bisect
import datetime as dt
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from findata.api.responses import json_bytes

#: what a kept row costs beyond its JSON text: the Fragment, the bytes object, list slots, date
ROW_OVERHEAD_BYTES = 120

#: version label, dataset, entity id, the rows' shape (what they hold, apart from the window)
EntityKey = tuple[str, str, int, Hashable]


@dataclass(frozen=True)
class EntityRows:
    """One entity's rows of a dataset, ordered by date, with their dates."""

    dates: list[dt.date]
    rows: list[orjson.Fragment]
    size: int  # bytes the entry holds, about

    def between(self, start: dt.date | None, end: dt.date | None) -> list[orjson.Fragment]:
        """The rows dated from ``start`` to ``end``, both inclusive (None: unbounded)."""
        low = 0 if start is None else bisect.bisect_left(self.dates, start)
        high = len(self.dates) if end is None else bisect.bisect_right(self.dates, end)
        return self.rows[low:high]

    @classmethod
    def of(cls, rows: Iterable[dict[str, Any]], date_field: str = "date") -> EntityRows:
        """Rows (dicts in the answer's field order, ordered by ``date_field``) serialised once,
        exactly as an answer's ``data`` would carry them."""
        dates: list[dt.date] = []
        texts: list[orjson.Fragment] = []
        size = 0
        for row in rows:
            text = json_bytes(row)
            dates.append(row[date_field])
            texts.append(orjson.Fragment(text))
            size += len(text) + ROW_OVERHEAD_BYTES
        return cls(dates, texts, size)


@dataclass
class RowStoreStats:
    """What the store did since the process started."""

    hits: int = 0
    loads: int = 0
    evictions: int = 0
    bytes: int = 0
    entries: int = 0


class RowStore:
    """Entity rows of open versions within ``budget_bytes`` (least recently used out first)."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        self._entries: OrderedDict[EntityKey, EntityRows] = OrderedDict()
        self._lock = threading.Lock()
        self.stats = RowStoreStats()

    @property
    def enabled(self) -> bool:
        """False when the budget is 0: every request asks DuckDB."""
        return self.budget_bytes > 0

    def entity_rows(
        self, key: EntityKey, load: Callable[[], Iterable[dict[str, Any]]]
    ) -> EntityRows:
        """The entity's rows, loaded with ``load`` (every row of the entity in order) when the
        store does not hold them. Two requests loading the same entity at once both load it;
        either result is the same rows, so the second simply replaces the first."""
        with self._lock:
            held = self._entries.get(key)
            if held is not None:
                self._entries.move_to_end(key)
                self.stats.hits += 1
                return held
        loaded = EntityRows.of(load())
        with self._lock:
            self.stats.loads += 1
            if loaded.size > self.budget_bytes:
                return loaded  # larger than the whole budget: served, not kept
            replaced = self._entries.pop(key, None)
            if replaced is not None:
                self.stats.bytes -= replaced.size
            self._entries[key] = loaded
            self.stats.bytes += loaded.size
            while self.stats.bytes > self.budget_bytes:
                _, evicted = self._entries.popitem(last=False)
                self.stats.bytes -= evicted.size
                self.stats.evictions += 1
            self.stats.entries = len(self._entries)
        return loaded

    def drop_version(self, label: str) -> None:
        """Forget every entry of version ``label`` (it was closed)."""
        with self._lock:
            for key in [key for key in self._entries if key[0] == label]:
                self.stats.bytes -= self._entries.pop(key).size
            self.stats.entries = len(self._entries)
