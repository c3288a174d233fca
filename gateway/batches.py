"""Parsing a fleet as it arrives: batches of raw objects, parsed in a worker thread."""

from __future__ import annotations

import asyncio
import collections
from typing import Any

from gateway.store import Prepared, Store

__all__ = ["Batches"]

#: Batches received ahead of the parser.
_AHEAD = 2


class Batches:
    """Objects parsed in a worker thread, batch by batch, while the next ones arrive.

    The API server works while the gateway parses. At most ``_AHEAD`` batches of
    raw JSON objects (many times their records' size) wait for the parser, so
    memory stays bounded however large the fleet. Callers pause the cyclic
    collector meanwhile: decoding and parsing a fleet builds millions of objects
    and no cycles, and the collector's full passes over the growing heap would
    cost more than the decoding itself (see gateway.bulk).
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._prepared = Prepared({}, {}, {})
        self._parsing: collections.deque[asyncio.Future[Prepared]] = collections.deque()
        self.count = 0

    async def add(self, objects: list[Any]) -> None:
        while len(self._parsing) >= _AHEAD:
            self._prepared.absorb(await self._parsing.popleft())
        if objects:
            work = asyncio.to_thread(self._store.prepare, objects, self.count)
            self._parsing.append(asyncio.ensure_future(work))
            self.count += len(objects)

    async def finish(self) -> Prepared:
        while self._parsing:
            self._prepared.absorb(await self._parsing.popleft())
        return self._prepared

    def cancel(self) -> None:
        for future in self._parsing:
            future.cancel()
