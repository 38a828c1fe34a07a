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
from typing import Any, Protocol, TypeVar

import orjson

from findata.api.responses import json_text

#: what a kept row costs beyond its JSON text: the Fragment, the bytes object, list slots, key
ROW_OVERHEAD_BYTES = 120
#: what a row's own entity id costs, kept when an entry's rows are of several entities
ENTITY_BYTES = 40
#: keys remembered as larger than the budget, at most (the least recent forgotten first)
TOO_LARGE_KEYS = 4096

#: version label, dataset, entity id, the rows' shape (what they hold, apart from the window)
EntityKey = tuple[str, str, int, Hashable]


class Entry(Protocol):
    """What the store keeps for one key: anything that says its size."""

    @property
    def size(self) -> int:
        """Bytes the entry holds, about."""
        ...


Held = TypeVar("Held", bound=Entry)


@dataclass(frozen=True)
class EntityRows:
    """One entity's rows of a dataset in the contract's order, which leads with a date (oldest
    or newest first), each row's JSON text with its date's sort key and its ``entity_id``."""

    #: each row's date as a day number, negated when the rows are newest first (so ascending)
    keys: list[int]
    rows: list[orjson.Fragment]
    #: each row's ``entity_id``; one element when every row has the same
    entities: list[int]
    size: int  # bytes the entry holds, about
    newest_first: bool = False

    def window(self, start: dt.date | None, end: dt.date | None) -> range:
        """The positions of the rows dated from ``start`` to ``end``, both inclusive (None:
        unbounded)."""
        low_key, high_key = (end, start) if self.newest_first else (start, end)
        low = 0 if low_key is None else bisect.bisect_left(self.keys, self._key(low_key))
        high = (
            len(self.keys)
            if high_key is None
            else bisect.bisect_right(self.keys, self._key(high_key))
        )
        return range(low, max(low, high))

    def between(self, start: dt.date | None, end: dt.date | None) -> list[orjson.Fragment]:
        """The rows dated from ``start`` to ``end``, both inclusive (None: unbounded)."""
        positions = self.window(start, end)
        return self.rows[positions.start : positions.stop]

    def entities_at(self, positions: range) -> set[int]:
        """The ``entity_id`` of the rows at ``positions``."""
        if not positions:
            return set()
        if len(self.entities) == 1:
            return {self.entities[0]}
        return set(self.entities[positions.start : positions.stop])

    def _key(self, day: dt.date) -> int:
        return -day.toordinal() if self.newest_first else day.toordinal()

    @classmethod
    def of(
        cls,
        rows: Iterable[dict[str, Any]],
        date_field: str = "date",
        *,
        newest_first: bool = False,
    ) -> EntityRows:
        """Rows (dicts in the answer's field order, ordered by ``date_field``, oldest first or
        ``newest_first``) serialised once, exactly as an answer's ``data`` would carry them."""
        keys: list[int] = []
        texts: list[orjson.Fragment] = []
        entities: list[int] = []
        size = 0
        sign = -1 if newest_first else 1
        for row in rows:
            text = json_text(row)
            keys.append(sign * row[date_field].toordinal())
            texts.append(orjson.Fragment(text))
            entities.append(row["entity_id"])
            size += len(text) + ROW_OVERHEAD_BYTES
        if len(set(entities)) <= 1:
            entities = entities[:1]
        else:
            size += len(entities) * ENTITY_BYTES
        return cls(keys, texts, entities, size, newest_first)


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
        self._entries: OrderedDict[EntityKey, Entry] = OrderedDict()
        #: keys whose rows took more than the whole budget (answered by DuckDB from then on)
        self._too_large: OrderedDict[EntityKey, None] = OrderedDict()
        self._lock = threading.Lock()
        self.stats = RowStoreStats()

    @property
    def enabled(self) -> bool:
        """False when the budget is 0: every request asks DuckDB."""
        return self.budget_bytes > 0

    def too_large(self, key: EntityKey) -> bool:
        """True when the rows of ``key`` were loaded once and took more than the whole budget:
        the caller asks DuckDB for the request's page instead (loading every row again for
        each request would cost more)."""
        with self._lock:
            return key in self._too_large

    def kept(self, key: EntityKey, load: Callable[[], Held]) -> Held | None:
        """``entity_rows`` where the store can keep them: None when it is off or the rows of
        ``key`` were too large for it (the caller asks DuckDB then)."""
        if not self.enabled or self.too_large(key):
            return None
        return self.entity_rows(key, load)

    def entity_rows(self, key: EntityKey, load: Callable[[], Held]) -> Held:
        """The entity's rows (``EntityRows``, or an endpoint's own kind of entry), loaded with
        ``load`` (every row of the entity in order) when the store does not hold them. Two
        requests loading the same entity at once both load it; either result is the same rows,
        so the second simply replaces the first."""
        with self._lock:
            held = self._entries.get(key)
            if held is not None:
                self._entries.move_to_end(key)
                self.stats.hits += 1
                return held  # type: ignore[return-value]  # a key's entries are of one kind
        loaded = load()
        with self._lock:
            self.stats.loads += 1
            if loaded.size > self.budget_bytes:
                # larger than the whole budget: served, not kept, and remembered as such
                self._too_large[key] = None
                if len(self._too_large) > TOO_LARGE_KEYS:
                    self._too_large.popitem(last=False)
                return loaded
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
            for key in [key for key in self._too_large if key[0] == label]:
                del self._too_large[key]
            self.stats.entries = len(self._entries)
