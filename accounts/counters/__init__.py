"""The counters that admit requests: where the live request, row and distinct-value counts are
kept, chosen by the settings (:func:`usage_counters_for`). One interface
(``interface.py``: ``UsageCounters``), one module per backend:

- ``database.py``: every reservation is a control-plane transaction (row locks on PostgreSQL,
  SQLite's write lock). Exact with any number of workers and hosts; the slowest.
- ``memory.py``: the counts live in this process, loaded from the control plane the first time
  a subject's window is used, and written back in batches (``batches.py``). Exact
  while this is the only process counting on the control plane: the embedded default, one
  ``findata serve`` worker on SQLite.
- ``redis.py``: the counts live in Redis and change by atomic scripts, shared by every worker
  and host on the same Redis; each process writes what it added to the control plane in
  batches (``batches.py``).

With ``memory`` and ``redis`` a crash loses at most about one second of counted usage (what the
writer had not written yet); admission stays exact, since it reads the live counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from findata.accounts.counters.interface import AnsweredCall, CountersKind, UsageCounters

if TYPE_CHECKING:
    import sqlalchemy as sa

__all__ = ["AnsweredCall", "CountersKind", "UsageCounters", "usage_counters_for"]


def usage_counters_for(
    kind: CountersKind, engine: sa.Engine, redis_url: str | None = None
) -> UsageCounters:
    """The counters of ``kind`` on the control plane ``engine`` (Redis at ``redis_url``); each
    backend's module is imported when chosen (the Redis client only where Redis counts)."""
    if kind == "memory":
        from findata.accounts.counters.memory import MemoryCounters

        return MemoryCounters(engine)
    if kind == "redis":
        from findata.accounts.counters.redis import RedisCounters

        if redis_url is None:
            raise ValueError("redis usage counters need a Redis URL (FINDATA_CACHE_URL)")
        return RedisCounters(redis_url, engine)
    from findata.accounts.counters.database import DatabaseCounters

    return DatabaseCounters(engine)
