"""A response cache that can never serve an answer older than the store.

Keys carry the version of the data an answer was computed from, so a change in
the store makes every older entry unreachable at once: no invalidation, no
prefix deletes, no window in which a stale answer can be read. Old entries age
out by size (memory) or TTL (Redis).

Which version decides depends on who shares the cache:

* in memory (one replica), what the answer read (:mod:`gateway.store.reads`): the
  store generation, which grows on every change, for an answer that read the
  fleet; for one that read less, the records of the hosts it read and the
  store's views it read (a page's list, a filter's hosts, a ledger of totals),
  so that under churn an answer lives until what it shows changes. The reads
  are kept beside the key, and checked before the answer is served;
* in Redis (several replicas, each with its own informer), the resourceVersion
  the snapshot was taken at. Replicas that have applied the same events up to
  the same resourceVersion hold the same fleet, so they can share answers. A
  source without resourceVersions (demo, files) falls back to a key private to
  the replica: such replicas share nothing, which is correct if not useful.

An entry is an answer's bytes and its entity tag (gateway.http.conditional), and
beside it, under the same key and encoding's name, the same answer compressed
(gateway.http.compression): a client that asks for gzip gets it at the cost of a
lookup, as one asking for nothing does.

A cache backend that fails (Redis gone) never fails a request: the answer is
computed from the store, the failure is logged once and counted, and the
backend is left alone for a few seconds before it is tried again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NamedTuple

from aiocache import SimpleMemoryCache
from aiocache.base import BaseCache
from aiocache.serializers import BaseSerializer

from gateway import __version__
from gateway.store.reads import Reads
from gateway.store.snapshot import Snapshot

__all__ = [
    "BoundedMemoryCache",
    "CacheStats",
    "Entry",
    "ResponseCache",
    "digest",
    "redis_backend",
]

log = logging.getLogger(__name__)

#: Length of an entity tag as kept in front of its answer's bytes.
TAG_BYTES = 32
#: The layout of an entry (:class:`Entry`), in every key: replicas of a rolling upgrade
#: sharing Redis must never read each other's entries as their own.
ENTRY_FORMAT = 2


class Entry(NamedTuple):
    """An answer as kept: its entity tag (``TAG_BYTES`` hex digits of what it says,
    whatever its encoding), and its bytes, compressed for an encoding's entry."""

    tag: str
    body: bytes

    def pack(self) -> bytes:
        return self.tag.encode() + self.body

    @classmethod
    def unpack(cls, value: bytes) -> Entry:
        return cls(value[:TAG_BYTES].decode(), bytes(value[TAG_BYTES:]))


class BytesSerializer(BaseSerializer):  # type: ignore[misc]
    """Responses are stored as the exact bytes sent to the client."""

    DEFAULT_ENCODING = None

    def dumps(self, value: bytes) -> bytes:
        return value

    def loads(self, value: bytes | None) -> bytes | None:
        return value


class BoundedMemoryCache(SimpleMemoryCache):  # type: ignore[misc]
    """aiocache's memory cache, bounded to ``max_entries`` and ``max_bytes`` of values.

    The least recently used go first. A bound in entries alone is no bound on memory:
    one alias bomb's answer is megabytes, and a few thousand of them are gigabytes.
    """

    def __init__(
        self, max_entries: int = 1000, max_bytes: int = 64 * 1024 * 1024, **kwargs: Any
    ) -> None:
        # aiocache bounds every call with asyncio.wait_for (a task per lookup, a fifth
        # of a cached answer's time); a lookup in a dict cannot hang.
        kwargs.setdefault("timeout", None)
        super().__init__(serializer=BytesSerializer(), **kwargs)
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        #: Bytes of the values held.
        self.bytes = 0
        self._cache: OrderedDict[str, bytes] = OrderedDict()

    def __len__(self) -> int:
        """The answers held."""
        return len(self._cache)

    async def get(
        self,
        key: str,
        default: Any = None,
        loads_fn: Any = None,
        namespace: str | None = None,
        _conn: Any = None,
    ) -> Any:
        """aiocache's get, without the layers it wraps around every call.

        Those are an environment lookup (AIOCACHE_DISABLE), a timeout, plugin hooks
        and a debug log line: 3 us per call, as much as the rest of a cached answer's
        lookup. This cache has no timeout, and no plugins (any given would be skipped).
        """
        value = await self._get(self.build_key(key, namespace=namespace))
        value = (loads_fn or self.serializer.loads)(value)
        return default if value is None else value

    async def _get(self, key: str, encoding: str | None = "utf-8", _conn: Any = None) -> Any:
        value = self._cache.get(key)
        if value is not None:
            self._cache.move_to_end(key)
        return value

    async def _set(
        self, key: str, value: Any, ttl: Any = None, _cas_token: Any = None, _conn: Any = None
    ) -> Any:
        if len(value) > self.max_bytes:
            return False
        await self._delete(key)
        result = await super()._set(key, value, ttl=ttl, _cas_token=_cas_token, _conn=_conn)
        if key in self._cache:
            self.bytes += len(value)
        while len(self._cache) > self.max_entries or self.bytes > self.max_bytes:
            await self._delete(next(iter(self._cache)))
        return result

    async def _delete(self, key: str, _conn: Any = None) -> Any:
        value = self._cache.get(key)
        if value is not None:
            self.bytes -= len(value)
        return await super()._delete(key, _conn=_conn)

    async def _clear(self, namespace: str | None = None, _conn: Any = None) -> Any:
        for key in [k for k in self._cache if namespace is None or k.startswith(namespace)]:
            await self._delete(key)
        return True


def redis_backend(url: str, *, timeout: float = 0.25) -> BaseCache:
    """A Redis backend from ``redis://host:port/db``; operations time out quickly."""
    from urllib.parse import urlparse

    from aiocache import RedisCache

    parsed = urlparse(url)
    return RedisCache(
        endpoint=parsed.hostname or "127.0.0.1",
        port=parsed.port or 6379,
        db=int(parsed.path.lstrip("/") or 0),
        password=parsed.password,
        serializer=BytesSerializer(),
        namespace="hgw",
        timeout=timeout,
        create_connection_timeout=timeout,
    )


def digest(document: str, operation: str | None, variables: Any) -> str:
    """What identifies a request's answer, but for the version of the data.

    Computed once per distinct request by its caller: a key is then this digest
    with the version in front, a string join per request.
    """
    material = json.dumps(
        [__version__, ENTRY_FORMAT, document, operation, variables],
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(material.encode()).hexdigest()


@dataclasses.dataclass(slots=True)
class CacheStats:
    hits: int = 0
    misses: int = 0
    stores: int = 0
    errors: int = 0
    degraded: bool = False


class ResponseCache:
    """Serialized GraphQL responses, keyed by request and data version."""

    def __init__(
        self,
        backend: BaseCache,
        *,
        shared: bool = False,
        ttl: int | None = None,
        retry_after: float = 5.0,
        max_entry_bytes: int = 8 * 1024 * 1024,
        max_reads_bytes: int = 8 * 1024 * 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backend = backend
        #: Answers larger than this are not kept: each would crowd out hundreds of others.
        self.max_entry_bytes = max_entry_bytes
        self.shared = shared
        self.ttl = ttl
        self.retry_after = retry_after
        self._clock = clock
        self.stats = CacheStats()
        self._instance = uuid.uuid4().hex
        self._down_until = 0.0
        # In memory: key -> what its answer read and its bytes, as many as the backend
        # holds answers, and taking at most max_reads_bytes (a page's reads are a
        # hundred records'): the least recently used let go first, and their answers
        # with them (a miss).
        self._reads: OrderedDict[str, tuple[Reads, int]] = OrderedDict()
        self._max_reads = getattr(backend, "max_entries", 1000)
        self.max_reads_bytes = max_reads_bytes
        #: The bytes of the reads kept.
        self.reads_bytes = 0

    def key(self, digest: str, snapshot: Snapshot) -> str:
        """The cache key of a request (its :func:`digest`) against one snapshot."""
        if not self.shared:
            return f"{self._instance}:{digest}"
        if snapshot.resource_version is not None:
            return f"rv:{snapshot.resource_version}:{digest}"
        return f"{self._instance}:{snapshot.generation}:{digest}"

    async def get(
        self, key: str, snapshot: Snapshot | None = None, encoding: str | None = None
    ) -> Entry | None:
        """The answer filed under ``key`` (compressed: for ``encoding``); in memory, only
        while what it read is the same in ``snapshot``.

        An encoding's entry missing is no miss: the caller looks for the answer next.
        """
        missed = 0 if encoding else 1
        if not self.shared:
            found = self._reads.get(key)
            if found is None or snapshot is None or not found[0].valid(snapshot):
                self.stats.misses += missed
                return None
            self._reads.move_to_end(key)
        if self._clock() < self._down_until:
            self.stats.misses += missed
            return None
        try:
            value = await self.backend.get(_filed(key, encoding))
        except Exception as error:  # a backend failure is never the client's problem
            self._failed(error)
            self.stats.misses += missed
            return None
        self._recovered()
        if value is None:
            self.stats.misses += missed
            return None
        self.stats.hits += 1
        return Entry.unpack(value)

    async def set(
        self, key: str, entry: Entry, reads: Reads | None = None, encoding: str | None = None
    ) -> None:
        """File an answer; in memory, with what it read (none given: not filed). Its
        compressed form is filed with ``encoding``, only beside an answer filed."""
        value = entry.pack()
        if self._clock() < self._down_until or len(value) > self.max_entry_bytes:
            return
        if not self.shared:
            if encoding is not None:
                if key not in self._reads:
                    return
            elif reads is None or not self._keep(key, reads):
                return
        try:
            await self.backend.set(_filed(key, encoding), value, ttl=self.ttl)
        except Exception as error:
            self._failed(error)
            return
        self.stats.stores += encoding is None
        self._recovered()

    def _keep(self, key: str, reads: Reads) -> bool:
        """File ``reads`` under ``key`` (in place of the answer's before), within the
        bounds; False if they alone pass them."""
        before = self._reads.pop(key, None)
        if before is not None:
            self.reads_bytes -= before[1]
        size = reads.nbytes()
        if size > self.max_reads_bytes:
            return False
        self.reads_bytes += size
        self._reads[key] = (reads, size)
        while len(self._reads) > self._max_reads or self.reads_bytes > self.max_reads_bytes:
            self.reads_bytes -= self._reads.popitem(last=False)[1][1]
        return True

    def _failed(self, error: Exception) -> None:
        self.stats.errors += 1
        self._down_until = self._clock() + self.retry_after
        if not self.stats.degraded:
            log.warning("response cache unavailable, answering uncached: %r", error)
        self.stats.degraded = True

    def _recovered(self) -> None:
        if self.stats.degraded:
            log.warning("response cache available again")
        self.stats.degraded = False


def _filed(key: str, encoding: str | None) -> str:
    return key if encoding is None else f"{key}:{encoding}"
