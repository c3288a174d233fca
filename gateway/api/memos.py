"""What answers keep for the next ones: one set per store, made by the app, reported.

An answer under churn costs only the hosts that changed because what earlier
answers made of the same records is kept: the completed objects of records
(:mod:`gateway.api.reuse`), a subscription event's result for every subscriber of
the same operation, the payload of a host's change for all its subscribers
(:mod:`gateway.api.recent`), the fleet totals every ``fleetCapacityChanged``
subscriber of a filter and grouping reads (:class:`Totals`), and what is judged
of each operation's selections (:mod:`gateway.api.judgments`). Each is bounded in
bytes, by a budget the app sets when it starts, and reported in /metrics with
every other memo: they live in the store's :class:`~gateway.domain.bounded.Memos`,
beside its views, and each request's context finds them there.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
import weakref
from collections.abc import Hashable
from typing import Any

from gateway.api.documents import DOCUMENT_BYTES
from gateway.api.judgments import Judgments
from gateway.api.recent import MAX_BYTES as EVENT_BYTES
from gateway.api.recent import Recent
from gateway.api.reuse import MAX_BYTES as COMPLETED_BYTES
from gateway.api.reuse import Kept
from gateway.domain.bounded import Figures, Memos
from gateway.domain.fleet import FleetGroup
from gateway.store.snapshot import Snapshot

__all__ = ["COMPLETED_BYTES", "EVENT_BYTES", "PAYLOADS", "RESULTS", "Answers", "Totals"]

RESULTS = "subscription results"
PAYLOADS = "subscription payloads"
#: Totals kept at most: a quiet fleet's snapshot is current for hours, asked by
#: subscribers with ever new filters.
MAX_TOTALS = 256
#: What one resource of one group of totals takes, about (a dozen exact sums).
RESOURCE_BYTES = 1024


class Totals:
    """Fleet totals by (filter, grouping), of the newest snapshot each was asked for.

    A change wakes every subscriber at once, and they all read the new snapshot:
    its totals are counted once, the others await the same future. The snapshot
    is held weakly (a kept total pins no fleet), and one of an older snapshot than
    the one kept is counted for its asker alone.
    """

    name = "subscription totals"

    def __init__(self, max_kept: int = MAX_TOTALS, max_bytes: int = EVENT_BYTES) -> None:
        self.max_kept = max_kept
        self.max_bytes = max_bytes
        self._kept: dict[Hashable, tuple[weakref.ref[Snapshot], asyncio.Future[Any], int]] = {}
        self._bytes = 0
        self._hits = 0
        self._evictions = 0

    def get(self, snapshot: Snapshot, key: Hashable) -> asyncio.Future[list[FleetGroup]] | None:
        found = self._kept.get(key)
        if found is None or found[0]() is not snapshot:
            return None
        self._hits += 1
        return found[1]

    def put(
        self, snapshot: Snapshot, key: Hashable, totals: asyncio.Future[list[FleetGroup]]
    ) -> None:
        """Keep ``totals`` once counted, unless a newer snapshot's are kept already."""
        found = self._kept.get(key)
        held = None if found is None else found[0]()
        if held is not None and held.generation > snapshot.generation:
            return
        self._drop(key)
        self._kept[key] = (weakref.ref(snapshot), totals, 0)
        if totals.done():
            self._counted(key, totals)
        else:
            totals.add_done_callback(lambda done: self._counted(key, done))

    def figures(self) -> Figures:
        return Figures(len(self._kept), self._bytes, self._hits, self._evictions)

    def _counted(self, key: Hashable, done: asyncio.Future[list[FleetGroup]]) -> None:
        found = self._kept.get(key)
        if found is None or found[1] is not done:
            return
        if done.cancelled() or done.exception() is not None:
            self._drop(key)
            return
        size = sum(RESOURCE_BYTES * (1 + len(g.resources)) for g in done.result())
        self._kept[key] = (found[0], done, size)
        self._bytes += size
        while self._kept and (len(self._kept) > self.max_kept or self._bytes > self.max_bytes):
            self._drop(next(iter(self._kept)))
            self._evictions += 1

    def _drop(self, key: Hashable) -> None:
        found = self._kept.pop(key, None)
        if found is not None:
            self._bytes -= found[2]


@dataclasses.dataclass(frozen=True, slots=True)
class Answers:
    """The memos of one store's answers."""

    completed: Kept
    #: Subscription events' results, shared by their subscribers (on the event loop).
    results: Recent[Any]
    #: Each change's message payload, one per kind, for all its subscribers.
    payloads: Recent[Any]
    #: Fleet totals for every fleetCapacityChanged subscriber of a filter and grouping.
    totals: Totals
    #: What is judged of operations' selections: whether they are kept, their plans.
    judgments: Judgments

    @classmethod
    def install(
        cls,
        memos: Memos,
        *,
        completed_bytes: int = COMPLETED_BYTES,
        event_bytes: int = EVENT_BYTES,
        judgment_bytes: int = DOCUMENT_BYTES,
    ) -> Answers:
        """New memos with these budgets, reported by ``memos`` from now on."""
        return cls(
            memos.add(Kept(max_bytes=completed_bytes)),
            memos.add(Recent(RESULTS, _result_bytes, max_bytes=event_bytes)),
            memos.add(Recent(PAYLOADS, sys.getsizeof, max_bytes=event_bytes)),
            memos.add(Totals(max_bytes=event_bytes)),
            memos.add(Judgments(judgment_bytes)),
        )

    @classmethod
    def of(cls, memos: Memos) -> Answers:
        """The memos ``memos`` reports, installed with the default budgets if the app
        installed none (a store used without an app: tests, tools)."""
        names = (Kept.name, RESULTS, PAYLOADS, Totals.name, Judgments.name)
        completed, results, payloads, totals, judgments = (memos.get(n) for n in names)
        if (
            isinstance(completed, Kept)
            and isinstance(results, Recent)
            and isinstance(payloads, Recent)
            and isinstance(totals, Totals)
            and isinstance(judgments, Judgments)
        ):
            return cls(completed, results, payloads, totals, judgments)
        return cls.install(memos)


def _result_bytes(result: Any) -> int:
    """What an execution result takes, as its JSON's length (once per event, not per
    subscriber: every subscriber of the operation takes the same result)."""
    return len(json.dumps([result.data, result.errors], default=str))
