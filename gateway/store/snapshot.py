"""Snapshots: the fleet at one store generation, and what questions made of it.

A snapshot's fleet never changes: a query that holds one sees one consistent
fleet however the store moves on. What a question makes of the whole fleet is kept on
the snapshot it was made for: indexes by zone, aggregate and trait (built once
per snapshot, by the first question that needs them: under churn a snapshot
nobody queries costs no indexing at all), and what the store carries forward
change by change instead of making again: ledgers (fleet totals), selections
(the hosts a filter selects) and the consumer index
(:mod:`gateway.store.carried`).
"""

from __future__ import annotations

import dataclasses
import enum
import logging
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from gateway.domain.ledger import Ledger, Step, Tally
from gateway.domain.records import Hypervisor
from gateway.store.carried import CarriedT
from gateway.store.consumers import ConsumerIndex, Consumers
from gateway.store.ordered import Ordered
from gateway.store.selections import (
    KEEP_UNUSED,
    MAX_HELD,
    MAX_SELECTIONS,
    Predicate,
    Selection,
)
from gateway.store.shards import ShardedMap

if TYPE_CHECKING:
    from gateway.store.store import Store

__all__ = ["Change", "ChangeType", "Snapshot", "Table"]

log = logging.getLogger(__name__)


class ChangeType(enum.Enum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclasses.dataclass(frozen=True, slots=True)
class Change:
    """One hypervisor that changed: its new state, or its last state when deleted."""

    type: ChangeType
    hypervisor: Hypervisor
    previous: Hypervisor | None


class Snapshot:
    """A view of the fleet at one store generation: its hosts never change; what is
    made of them is added as questions (or the store, :meth:`take_over`, after
    publishing it) make it."""

    def __init__(
        self,
        generation: int,
        hypervisors: ShardedMap[Hypervisor],
        resource_version: str | None,
        store: Store | None = None,
    ) -> None:
        self.generation = generation
        self.by_name = hypervisors
        #: The source's position at this change (a list or event resourceVersion).
        self.resource_version = resource_version
        self._ledgers: dict[Tally, Ledger] = {}
        self._selections: dict[Hashable, Selection] = {}
        self._indexes: dict[type[ConsumerIndex], ConsumerIndex] = {}
        self._store = store

    @property
    def origin(self) -> Store | None:
        """The store that made this snapshot (None for a store's empty first one)."""
        return self._store

    def keeps(self, tally: Tally) -> bool:
        """Whether the sums ``tally`` keeps are counted on this snapshot already."""
        return tally in self._ledgers

    def ledger(self, tally: Tally) -> Ledger:
        """The sums ``tally`` keeps over this fleet: carried forward from the previous
        snapshot's by the store, or counted here by the first question that needs them
        (and then handed on to the snapshots the store made meanwhile)."""
        found = self._ledgers.get(tally)
        if found is None:
            found = self._made(_ledgers, tally, lambda: Ledger.of(tally, self.by_name.values()))
        return found

    def selection(
        self, key: Hashable, predicate: Predicate, candidates: Iterable[Hypervisor]
    ) -> Ordered:
        """The hosts ``predicate`` (a filter, named by ``key``) selects, in name order:
        judged on ``candidates`` (in name order, every host it could select) the first
        time, then carried forward by the store, change by change, while it is asked."""
        held = self._selections
        found = held.get(key)
        if found is None:
            found = self._made(
                _selections, key, lambda: Selection.of(predicate, candidates, self.generation)
            )
            for oldest in list(held)[: max(len(held) - MAX_HELD, 0)]:
                if oldest != key:
                    held.pop(oldest, None)
        found.used = self.generation
        return Ordered(found.names, self.by_name)

    def take_over(self, old: Snapshot, step: Step) -> None:
        """Carry what questions made of ``old`` (the snapshot before this one) here,
        brought up to date by ``step``, the change between: every ledger, the
        selections still asked for (the most recent first), the consumer index
        while asked for. Called after this snapshot is published: a question making
        one on ``old`` meanwhile is either copied here or sees this one and carries
        its own (:meth:`Store.share`)."""
        for tally, ledger in old._ledgers.copy().items():
            self._ledgers.setdefault(tally, ledger.apply(*step))
        asked = sorted(old._selections.copy().items(), key=lambda item: -item[1].used)
        for key, selection in asked[:MAX_SELECTIONS]:
            if self.generation - selection.used > KEEP_UNUSED:
                continue
            try:
                self._selections.setdefault(key, selection.apply(*step))
            except Exception:  # a filter that fails on a new record: judged again when asked
                log.exception("filter %r failed on a changed host; dropped", key)
        index = old._indexes.get(ConsumerIndex)
        if index is not None and index.carried(self.generation, len(self)):
            self._indexes.setdefault(ConsumerIndex, index.apply(*step))

    def _made(
        self, table: Table[CarriedT], key: Hashable, make: Callable[[], CarriedT]
    ) -> CarriedT:
        if self._store is None:  # the empty first snapshot
            return table(self).setdefault(key, make())
        return self._store.share(table, key, self, make)

    def __len__(self) -> int:
        return len(self.by_name)

    @cached_property
    def names(self) -> tuple[str, ...]:
        """Every hypervisor's name, sorted (handed on by the store while no host comes
        or goes)."""
        return tuple(sorted(self.by_name))

    @cached_property
    def ordered(self) -> Ordered:
        """All hypervisors, sorted by name."""
        return Ordered(self.names, self.by_name)

    @property
    def by_consumer(self) -> Consumers:
        """Consumer UUID -> its bookings, on every hypervisor it is booked on: indexed
        by the first question that needs it (then handed on to the snapshots the store
        made meanwhile), and carried forward by the store while questions ask."""
        index = self._indexes.get(ConsumerIndex)
        if index is None:
            index = self._made(
                _indexes, ConsumerIndex, lambda: ConsumerIndex.of(self.ordered, self.generation)
            )
        index.used = max(index.used, self.generation)
        return Consumers(index, self.by_name)

    def indexes_consumers(self, *, ordered: bool = False) -> bool:
        """Whether :attr:`by_consumer` is indexed here already (and, ``ordered``, its
        UUIDs in order or nearly): a question about consumers then reads, not counts."""
        index = self._indexes.get(ConsumerIndex)
        return index is not None and (not ordered or index.ordered())

    @cached_property
    def by_zone(self) -> Mapping[str | None, tuple[Hypervisor, ...]]:
        return _group(self.ordered, lambda h: (h.zone,))

    @cached_property
    def by_aggregate(self) -> Mapping[str | None, tuple[Hypervisor, ...]]:
        """Aggregate name (from any source) -> hypervisors; None for hosts in none."""
        return _group(self.ordered, lambda h: {a.name for a in h.aggregates} or {None})

    @cached_property
    def by_trait(self) -> Mapping[str, tuple[Hypervisor, ...]]:
        """Trait name (from any source) -> hypervisors."""
        return _group(self.ordered, lambda h: {t.name for t in h.traits})


def _group(
    hypervisors: Iterable[Hypervisor], keys: Callable[[Hypervisor], Iterable[Any]]
) -> dict[Any, tuple[Hypervisor, ...]]:
    groups: dict[Any, list[Hypervisor]] = defaultdict(list)
    for hypervisor in hypervisors:
        for key in keys(hypervisor):
            groups[key].append(hypervisor)
    return {key: tuple(members) for key, members in groups.items()}


#: Where a snapshot keeps one kind of carried value.
Table = Callable[[Snapshot], dict[Any, CarriedT]]


def _ledgers(snapshot: Snapshot) -> dict[Tally, Ledger]:
    return snapshot._ledgers


def _selections(snapshot: Snapshot) -> dict[Hashable, Selection]:
    return snapshot._selections


def _indexes(snapshot: Snapshot) -> dict[type[ConsumerIndex], ConsumerIndex]:
    return snapshot._indexes
