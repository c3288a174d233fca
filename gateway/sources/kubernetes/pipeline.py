"""Parsing a collection as it arrives: batches of raw objects, parsed in a worker thread."""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from gateway.sources.kubernetes.sink import Prepared, Sink
from gateway.store.collector import collector_paused

__all__ = ["Batches", "parsing"]

#: Batches received ahead of the parser.
_AHEAD = 2

P = TypeVar("P", bound=Prepared)


class Batches(Generic[P]):
    """Objects parsed in a worker thread, batch by batch, while the next ones arrive.

    The API server works while the gateway parses. At most ``_AHEAD`` batches
    wait for the parser, so memory stays bounded however large the fleet.
    ``read`` makes each object as received into the one to parse, in the worker
    as it comes to it: a stream's objects wait undecoded and are decoded one at
    a time, since decoded objects (many times their records' size) interleaved
    with the records built meanwhile pin the memory they lay in (1,000 hosts:
    33-38 KiB resident per host decoded ahead, 21-23 KiB undecoded; 5,000 hosts:
    25 against 20). Callers pause the cyclic
    collector meanwhile (:func:`parsing` does): decoding and parsing a fleet
    builds millions of objects and no cycles, and the collector's full passes
    over the growing heap would cost more than the decoding itself (see
    gateway.store.collector).
    """

    def __init__(self, store: Sink[P], read: Callable[[Any], Any] | None = None) -> None:
        self._store = store
        self._read = read
        self._prepared: P | None = None
        self._parsing: collections.deque[asyncio.Future[P]] = collections.deque()
        self.count = 0

    async def add(self, objects: list[Any]) -> None:
        while len(self._parsing) >= _AHEAD:
            self._absorb(await self._parsing.popleft())
        if objects:
            parsed = objects if self._read is None else map(self._read, objects)
            work = asyncio.to_thread(self._store.prepare, parsed, self.count)
            self._parsing.append(asyncio.ensure_future(work))
            self.count += len(objects)

    async def finish(self) -> P:
        while self._parsing:
            self._absorb(await self._parsing.popleft())
        return self._store.prepare(()) if self._prepared is None else self._prepared

    def _absorb(self, part: P) -> None:
        if self._prepared is None:
            self._prepared = part  # made by this set's parse: no one else holds it
        else:
            self._prepared.absorb(part)

    def cancel(self) -> None:
        for future in self._parsing:
            future.cancel()


@contextlib.contextmanager
def parsing(store: Sink[P], read: Callable[[Any], Any] | None = None) -> Iterator[Batches[P]]:
    """Batches for one complete set, with the cyclic collector paused for the whole block.

    The block ends after the set is committed, so that the store's settle is the
    one collection to walk the new records (see Informer._synced).
    Batches still being parsed when it is left (an error, a cancel) are cancelled.
    """
    batches = Batches(store, read)
    with collector_paused():
        try:
            yield batches
        finally:
            batches.cancel()
