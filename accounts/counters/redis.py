"""Usage counters in Redis, shared by every worker and host on one Redis: each change is one
atomic Lua script, so admission is exact without a database transaction per request.

A window's hash (``requests``, ``rows``, ``refused``) or a day's set of distinct values is
loaded from the control plane the first time any process uses it (a script answers
``missing``, the process seeds the key only if it is still absent, and tries again); every
process writes what it added to the control plane in batches (``batches.py``).
Keys carry a namespace of the control plane, so installations sharing one Redis never mix.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import asdict
from typing import Any, cast

import redis
import sqlalchemy as sa

from findata.accounts import usage
from findata.accounts.counters.batches import WRITE_INTERVAL_SECONDS, PendingUsage, UsageWriter
from findata.accounts.counters.interface import AnsweredCall, CountersKind, UsageCounters
from findata.accounts.usage import (
    WINDOWS,
    Limits,
    Refusal,
    Reserved,
    Window,
    read_count,
    window_start,
)

#: kept past the window's end, so late writes (a release, an answer's rows) find their window
TTL_SECONDS = {"hour": 3 * 3600, "day": 2 * 86400}
#: a distinct-values set always holds this member, so a seeded but empty day still exists
MARKER = ""
#: values per script call (Lua's ``unpack`` takes a few thousand at most)
SEED_CHUNK = 1000

# KEYS: the day's and the hour's counters. ARGV: cost, then the requests per day and hour and
# the rows per day and hour allowances (-1: none). The same order of checks as
# ``usage.refusal_of``.
RESERVE = """
local day, hour = KEYS[1], KEYS[2]
if redis.call('EXISTS', day) == 0 or redis.call('EXISTS', hour) == 0 then return {'missing'} end
local cost = tonumber(ARGV[1])
local per_day, per_hour = tonumber(ARGV[2]), tonumber(ARGV[3])
local rows_day, rows_hour = tonumber(ARGV[4]), tonumber(ARGV[5])
local d = redis.call('HMGET', day, 'requests', 'rows')
local h = redis.call('HMGET', hour, 'requests', 'rows', 'refused')
if rows_day >= 0 and tonumber(d[2]) >= rows_day then return {'rows_day'} end
if rows_hour >= 0 and tonumber(h[2]) >= rows_hour then return {'rows_hour'} end
if tonumber(d[1]) + cost > per_day then return {'requests_day'} end
if per_hour >= 0 and tonumber(h[1]) + cost > per_hour then
  redis.call('HINCRBY', hour, 'refused', 1)
  if tonumber(h[3]) > 0 then return {'requests_hour_again'} end
  return {'requests_hour'}
end
return {'ok', redis.call('HINCRBY', day, 'requests', cost),
        redis.call('HINCRBY', hour, 'requests', cost), tonumber(d[2]), tonumber(h[2])}
"""

# KEYS: the day's and the hour's counters. ARGV: requests, rows to add. The day's counts after.
ADD = """
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('EXISTS', KEYS[2]) == 0 then
  return {'missing'}
end
redis.call('HINCRBY', KEYS[2], 'requests', ARGV[1])
redis.call('HINCRBY', KEYS[2], 'rows', ARGV[2])
return {'ok', redis.call('HINCRBY', KEYS[1], 'requests', ARGV[1]),
        redis.call('HINCRBY', KEYS[1], 'rows', ARGV[2])}
"""

# KEYS: the day's and the hour's counters, the day's set of distinct entities. ARGV: the rows,
# then the entity ids. The day's rows and distinct entities after; what is missing otherwise.
# An answer is counted in one round trip (rows and entities are both known once it is built).
COUNT_ANSWER = """
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('EXISTS', KEYS[2]) == 0 then
  return {'missing'}
end
if redis.call('EXISTS', KEYS[3]) == 0 then return {'missing_entities'} end
redis.call('HINCRBY', KEYS[2], 'rows', ARGV[1])
local rows = redis.call('HINCRBY', KEYS[1], 'rows', ARGV[1])
if #ARGV > 1 then redis.call('SADD', KEYS[3], unpack(ARGV, 2)) end
return {'ok', rows, redis.call('SCARD', KEYS[3]) - 1}
"""

# KEYS: one counter. ARGV: requests, rows, refused from the control plane, the TTL.
SEED_COUNTER = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'requests', ARGV[1], 'rows', ARGV[2], 'refused', ARGV[3])
  redis.call('EXPIRE', KEYS[1], ARGV[4])
end
return 1
"""

# KEYS: a day's set. ARGV: the values to add. How many distinct values after (-1: missing).
ADD_DISTINCT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if #ARGV > 0 then redis.call('SADD', KEYS[1], unpack(ARGV)) end
return redis.call('SCARD', KEYS[1]) - 1
"""

# KEYS: a day's set. ARGV: the allowance, the value. -2: missing; -1: the allowance is used
# up (the value is not added); else how many distinct values after adding it.
ADD_DISTINCT_WITHIN = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -2 end
if redis.call('SCARD', KEYS[1]) - 1 >= tonumber(ARGV[1]) then return -1 end
redis.call('SADD', KEYS[1], ARGV[2])
return redis.call('SCARD', KEYS[1]) - 1
"""

# KEYS: a day's set. ARGV: the TTL, the marker, the values on the control plane.
SEED_DISTINCT = """
local fresh = redis.call('EXISTS', KEYS[1]) == 0
redis.call('SADD', KEYS[1], unpack(ARGV, 2))
if fresh then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return 1
"""


class RedisCounters(UsageCounters):
    """Live counts in Redis; durable usage written by this process in batches."""

    kind: CountersKind = "redis"

    def __init__(
        self, url: str, engine: sa.Engine, interval: float = WRITE_INTERVAL_SECONDS
    ) -> None:
        self.engine = engine
        # a Redis that stops answering fails a request in a second, never hangs it
        self.redis = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
        self.namespace = "findata:" + hashlib.sha256(str(engine.url).encode()).hexdigest()[:12]
        self.pending = PendingUsage()
        self.writer = UsageWriter(engine, self.pending, interval)
        self._reserve = self.redis.register_script(RESERVE)
        self._add = self.redis.register_script(ADD)
        self._count_answer = self.redis.register_script(COUNT_ANSWER)
        self._seed_counter = self.redis.register_script(SEED_COUNTER)
        self._add_distinct = self.redis.register_script(ADD_DISTINCT)
        self._seed_distinct = self.redis.register_script(SEED_DISTINCT)
        self._add_distinct_within = self.redis.register_script(ADD_DISTINCT_WITHIN)

    def reserve(
        self, subject: str, now: dt.datetime, cost: int, limits: Limits
    ) -> Reserved | Refusal:
        allowances = [
            limits.requests_per_day,
            limits.requests_per_hour,
            limits.rows_per_day,
            limits.rows_per_hour,
        ]
        args = [cost, *(-1 if a is None else a for a in allowances)]
        answer = self._run_on_windows(self._reserve, subject, now, args)
        outcome = answer[0].decode()
        if outcome.startswith("requests_hour"):
            self.pending.add_count((subject, "hour", window_start(now, "hour")), refused=1)
        if outcome != "ok":
            return cast(Refusal, outcome)  # one of the script's refusals
        for window in WINDOWS:
            self.pending.add_count((subject, window, window_start(now, window)), requests=cost)
        return Reserved(now, *(int(value) for value in answer[1:]))

    def release(self, subject: str, at: dt.datetime, cost: int) -> None:
        self.add_usage(subject, at, requests=-cost)

    def add_usage(self, subject: str, at: dt.datetime, *, requests: int, rows: int = 0) -> None:
        self._add_to_windows(subject, at, requests, rows)

    def count_answer(
        self, subject: str, at: dt.datetime, call: AnsweredCall, entities: list[str]
    ) -> tuple[int, int]:
        entity_key = self._distinct_key(subject, at.date(), "entity")
        first, rest = entities[:SEED_CHUNK], entities[SEED_CHUNK:]  # Lua unpacks a few thousand
        args = [call.rows, *first]
        answer = self._run_on_windows(self._count_answer, subject, at, args, [entity_key])
        if answer[0] == b"missing_entities":  # loaded once, whichever process gets there first
            self._seed_day(subject, at.date(), "entity")
            answer = self._run_on_windows(self._count_answer, subject, at, args, [entity_key])
        if answer[0] != b"ok":
            raise redis.RedisError(f"usage counters of {subject} not kept: {answer[0]!r}")
        for window in WINDOWS:
            self.pending.add_count((subject, window, window_start(at, window)), 0, call.rows)
        if first:
            self.pending.add_distinct((subject, at.date(), "entity"), first)
        entities_today = int(answer[2])
        if rest:
            entities_today = self.add_distinct(subject, at.date(), "entity", rest)
        self.pending.add_call({"subject": subject, "at": at, **asdict(call)})
        return int(answer[1]), entities_today

    def add_distinct(self, subject: str, day: dt.date, kind: str, values: list[str]) -> int:
        key = self._distinct_key(subject, day, kind)
        count = 0
        for first in range(0, len(values) + 1, SEED_CHUNK):  # Lua unpacks a few thousand
            chunk = values[first : first + SEED_CHUNK]
            count = self._add_distinct(keys=[key], args=chunk)
            if count < 0:
                self._seed_day(subject, day, kind)
                count = self._add_distinct(keys=[key], args=chunk)
        if values:
            # the control plane ignores values it holds: no need to know which were new here
            self.pending.add_distinct((subject, day, kind), values)
        return int(count)

    def add_distinct_within(
        self, subject: str, day: dt.date, kind: str, value: str, allowance: int
    ) -> int | None:
        key = self._distinct_key(subject, day, kind)
        count = self._add_distinct_within(keys=[key], args=[allowance, value])
        if count == -2:
            self._seed_day(subject, day, kind)
            count = self._add_distinct_within(keys=[key], args=[allowance, value])
        if count == -1:
            return None
        self.pending.add_distinct((subject, day, kind), [value])
        return int(count)

    def _seed_day(self, subject: str, day: dt.date, kind: str) -> None:
        """Load a day's distinct values into Redis (a union: safe if another process did), in
        chunks (Lua's ``unpack`` takes a few thousand values at most)."""
        with self.engine.connect() as connection:
            known = sorted(usage.read_distinct(connection, subject, day, kind))
        key = self._distinct_key(subject, day, kind)
        for first in range(0, len(known) + 1, SEED_CHUNK):
            chunk = known[first : first + SEED_CHUNK]
            self._seed_distinct(keys=[key], args=[TTL_SECONDS["day"], MARKER, *chunk])

    def count_distinct(self, subject: str, day: dt.date, kind: str) -> int:
        return self.add_distinct(subject, day, kind, [])

    def usage(self, subject: str, at: dt.datetime, window: Window) -> tuple[int, int]:
        key = self._counter_key(subject, window, window_start(at, window))
        raw = self.redis.hmget(key, "requests", "rows")
        if raw[0] is None:
            self._seed(subject, window, window_start(at, window))
            raw = self.redis.hmget(key, "requests", "rows")
        return int(raw[0] or 0), int(raw[1] or 0)

    def reset(self, subject: str) -> None:
        self.pending.drop_subject(subject)
        self.writer.flush()
        for key in list(self.redis.scan_iter(match=f"{self.namespace}:*:{subject}:*")):
            self.redis.delete(key)
        with self.engine.begin() as connection:
            usage.forget_counts(connection, subject)

    def flush(self) -> None:
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()
        self.redis.close()

    def _add_to_windows(self, subject: str, at: dt.datetime, requests: int, rows: int) -> list[int]:
        """Add to both windows of ``at``; the day's requests and rows after it."""
        answer = self._run_on_windows(self._add, subject, at, [requests, rows])
        for window in WINDOWS:
            self.pending.add_count((subject, window, window_start(at, window)), requests, rows)
        return [int(value) for value in answer[1:]]

    def _run_on_windows(
        self,
        script: Any,
        subject: str,
        at: dt.datetime,
        args: list[Any],
        more_keys: list[str] | None = None,
    ) -> list[Any]:
        """Run a script on the day and hour counters of ``at`` (then ``more_keys``), seeding the
        counters once if missing."""
        starts = {window: window_start(at, window) for window in WINDOWS}
        keys = [self._counter_key(subject, window, start) for window, start in starts.items()]
        keys += more_keys or []
        answer = script(keys=keys, args=args)
        if answer[0] == b"missing":
            for window, start in starts.items():
                self._seed(subject, window, start)
            answer = script(keys=keys, args=args)
        return answer

    def _seed(self, subject: str, window: Window, start: dt.datetime) -> None:
        """Load a window's durable counts into Redis unless a process already did."""
        with self.engine.connect() as connection:
            count = read_count(connection, subject, window, start)
        self._seed_counter(
            keys=[self._counter_key(subject, window, start)],
            args=[count.requests, count.rows, count.refused, TTL_SECONDS[window]],
        )

    def _counter_key(self, subject: str, window: Window, start: dt.datetime) -> str:
        return f"{self.namespace}:count:{subject}:{window}:{start:%Y%m%dT%H}"

    def _distinct_key(self, subject: str, day: dt.date, kind: str) -> str:
        return f"{self.namespace}:distinct:{subject}:{day.isoformat()}:{kind}"
