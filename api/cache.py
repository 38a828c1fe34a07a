"""The response cache of data answers (spec: ``Age``, "a response served from cache adds no
rows").

Keys hold the data version, the plan's view (plan code or keyless, and the UTC day, which moves
Free's floor), the path and every parameter but the key: no account sees another plan's view,
and a newly published version is never answered from an older one's entries. In-process by
default; ``FINDATA_CACHE_URL=redis://…`` shares one cache between workers and hosts.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Protocol

import orjson

from findata.api.responses import kept_bytes

log = logging.getLogger("findata.api.cache")

ENTRY_SECONDS = 24 * 3600  # a day at most: the view changes with the UTC day anyway
#: how answers are kept in Redis (``_stored``); part of every key, so that a worker of another
#: release sharing the Redis never reads an entry it cannot parse
STORED_FORMAT = "b2"


@dataclass(frozen=True)
class CachedAnswer:
    """A 200 answer as served: its body, the headers that belong to it, and what it counted."""

    body: bytes
    headers: dict[str, str]
    stored_at: float  # UTC seconds since the epoch, by the app's clock
    rows: int
    entity_ids: list[int]

    def age(self, now: dt.datetime) -> int:
        """Seconds in the cache (``Age``)."""
        return max(0, int(now.timestamp() - self.stored_at))


class ResponseCache(Protocol):
    """Where answers are kept."""

    def get(self, key: str) -> CachedAnswer | None: ...

    def put(self, key: str, answer: CachedAnswer) -> None: ...

    def check(self) -> None:
        """Raise unless the cache answers (``/readyz``)."""


def cache_key(version: str, view: str, path: str, sent: Mapping[str, str]) -> str:
    """The key of one answer (the key itself, wherever it was sent, is not part of it)."""
    parameters = sorted((name, value) for name, value in sent.items() if name != "api_key")
    return (
        f"findata:answer:{STORED_FORMAT}:"
        + hashlib.sha256(orjson.dumps([version, view, path, parameters])).hexdigest()
    )


class MemoryCache:
    """The answers of this process, their bodies held to ``max_bytes`` in all (least recently
    used out first; an answer larger than the whole is not kept). Bounded by bytes, not
    entries: one answer may be a few hundred bytes or several megabytes."""

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._bytes = 0
        self._answers: OrderedDict[str, CachedAnswer] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def held_bytes(self) -> int:
        """The bodies' bytes held now."""
        return self._bytes

    def get(self, key: str) -> CachedAnswer | None:
        with self._lock:
            answer = self._answers.get(key)
            if answer is not None:
                self._answers.move_to_end(key)
            return answer

    def put(self, key: str, answer: CachedAnswer) -> None:
        size = len(answer.body)
        if size > self._max_bytes:
            return
        # held at its own size: the bytes counted are the bytes held
        answer = dataclasses.replace(answer, body=kept_bytes(answer.body))
        with self._lock:
            replaced = self._answers.pop(key, None)
            if replaced is not None:
                self._bytes -= len(replaced.body)
            self._answers[key] = answer
            self._bytes += size
            while self._bytes > self._max_bytes:
                _, evicted = self._answers.popitem(last=False)
                self._bytes -= len(evicted.body)

    def check(self) -> None:
        """This process's memory always answers."""


class RedisCache:
    """Answers shared by every worker that uses the same Redis. While Redis cannot be reached
    the cache is a miss that keeps nothing: answers are built afresh, never refused for it."""

    def __init__(self, url: str) -> None:
        import redis

        self._redis = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
        self._unreachable = redis.RedisError

    def get(self, key: str) -> CachedAnswer | None:
        try:
            raw = self._redis.get(key)
        except self._unreachable:
            log.warning("response cache unreachable: answering without it", exc_info=True)
            return None
        return None if raw is None else _answer_of(raw)

    def put(self, key: str, answer: CachedAnswer) -> None:
        try:
            self._redis.set(key, _stored(answer), ex=ENTRY_SECONDS)
        except self._unreachable:
            log.warning("response cache unreachable: answer not kept", exc_info=True)

    def check(self) -> None:
        """Redis answers a ping (raises ``redis.RedisError`` otherwise)."""
        self._redis.ping()


def _stored(answer: CachedAnswer) -> bytes:
    """An answer as kept in Redis: what it counted and its headers as one line of JSON, then
    the body as it is (inside JSON, the body's every quote would be escaped on the way in and
    read back on the way out)."""
    about = {name: value for name, value in asdict(answer).items() if name != "body"}
    return orjson.dumps(about) + b"\n" + answer.body


def _answer_of(stored: bytes) -> CachedAnswer:
    about, _, body = stored.partition(b"\n")  # orjson writes no newline in the first part
    return CachedAnswer(body=body, **orjson.loads(about))


def response_cache(url: str | None, memory_bytes: int) -> ResponseCache:
    """The configured cache: Redis for a ``redis://`` URL, else this process's memory (its
    answers' bodies held to ``memory_bytes``)."""
    return RedisCache(url) if url else MemoryCache(memory_bytes)
