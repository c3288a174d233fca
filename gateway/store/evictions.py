"""The operator's evictions in memory: immutable snapshots, and their changes.

Evictions are few (one per host being emptied, dozens in a region), so none of
the fleet store's machinery is needed (shards, carried ledgers, parsing in
threads): each snapshot is a plain map, and every write parses its objects
again and keeps a record wherever the new one is equal to it, which makes a
reload without changes a no-op. The shape is the fleet store's all the same:
sources write a complete set or one object at a time, queries read one
immutable :class:`EvictionSnapshot`, and listeners hear every change
(:class:`~gateway.store.feed.ChangeFeed` fans them out to subscribers).

Unlike Hypervisors, evictions may not be there to read at all: a cluster whose
operator predates them has no Eviction CRD. That is a state of the snapshot
(:attr:`EvictionSnapshot.unavailable`), not an empty set, so that the API can say
"unknown" instead of "no evictions".
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from functools import cached_property
from typing import Any

from gateway.domain.evictions import Eviction, parse_eviction
from gateway.domain.parse import ParseError
from gateway.store.listeners import Listeners
from gateway.store.snapshot import ChangeType

__all__ = ["EvictionBatch", "EvictionChange", "EvictionSnapshot", "EvictionStore"]

log = logging.getLogger(__name__)

#: Why there are no evictions to read before a source delivered them.
NOT_LOADED = "evictions have not been loaded yet"


@dataclasses.dataclass(frozen=True, slots=True)
class EvictionChange:
    """One eviction that changed: its new state, or its last state when deleted."""

    type: ChangeType
    eviction: Eviction
    previous: Eviction | None


class EvictionSnapshot:
    """The evictions at one generation of their store; never changed."""

    def __init__(
        self, generation: int, by_name: Mapping[str, Eviction], unavailable: str | None
    ) -> None:
        self.generation = generation
        self.by_name = by_name
        #: Why evictions cannot be read (no Eviction CRD, not loaded yet); None: they can.
        self.unavailable = unavailable

    def __len__(self) -> int:
        return len(self.by_name)

    @cached_property
    def ordered(self) -> tuple[Eviction, ...]:
        """Every eviction, by name."""
        return tuple(self.by_name[name] for name in sorted(self.by_name))

    @cached_property
    def by_hypervisor(self) -> Mapping[str, tuple[Eviction, ...]]:
        """Host name -> its evictions, by name (a host may have an old one and a new one)."""
        found: dict[str, list[Eviction]] = {}
        for eviction in self.ordered:
            if eviction.hypervisor is not None:
                found.setdefault(eviction.hypervisor, []).append(eviction)
        return {host: tuple(evictions) for host, evictions in found.items()}


@dataclasses.dataclass(slots=True)
class EvictionBatch:
    """A parsed set of Eviction objects, ready to :meth:`EvictionStore.commit`."""

    evictions: dict[str, Eviction]
    rejected: dict[str, str]

    def absorb(self, part: EvictionBatch) -> None:
        """Add a part prepared separately (one page of a LIST) to this set."""
        self.evictions.update(part.evictions)
        self.rejected.update(part.rejected)


Listener = Callable[[EvictionSnapshot, list[EvictionChange]], None]


class EvictionStore:
    """Holds the current :class:`EvictionSnapshot` and tells listeners every change.

    Written from the event loop's thread only, like the fleet's store; the same
    methods, so that one informer engine feeds both.
    """

    def __init__(self) -> None:
        self._snapshot = EvictionSnapshot(0, {}, NOT_LOADED)
        self._listeners: Listeners[EvictionSnapshot, list[EvictionChange]] = Listeners("eviction")
        self.ready = False
        self.resource_version: str | None = None
        #: Objects that could not be represented: name (or position) -> reason.
        self.rejected: dict[str, str] = {}

    @property
    def snapshot(self) -> EvictionSnapshot:
        return self._snapshot

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(snapshot, changes)`` after every change; returns an unsubscribe."""
        return self._listeners.add(listener)

    @property
    def listening(self) -> int:
        """How many listen: a change feed, or an evictionChanged subscriber each."""
        return len(self._listeners)

    def mark_ready(self) -> None:
        """The source has delivered a complete first view."""
        self.ready = True

    def replace(self, objects: Iterable[Any], resource_version: str | None = None) -> None:
        """Swap in a complete new set of Eviction objects: the hook of every source."""
        self.commit(self.prepare(objects), resource_version)
        self.mark_ready()

    def prepare(self, objects: Iterable[Any], start: int = 0) -> EvictionBatch:
        """Parse a complete set (or a part of it, numbered from ``start``)."""
        prepared = EvictionBatch({}, {})
        for position, obj in enumerate(objects, start):
            eviction = self._parse(obj, prepared.rejected, f"#{position}")
            if eviction is not None:
                prepared.evictions[eviction.name] = eviction
        return prepared

    def commit(self, prepared: EvictionBatch, resource_version: str | None = None) -> None:
        """Make a prepared set the store's content: evictions are available from now on."""
        old = self._snapshot.by_name
        new = {name: _same(old.get(name), e) for name, e in prepared.evictions.items()}
        self.rejected = prepared.rejected
        changes = [
            EvictionChange(ChangeType.DELETED, e, e) for name, e in old.items() if name not in new
        ]
        for name, eviction in new.items():
            previous = old.get(name)
            if previous is None:
                changes.append(EvictionChange(ChangeType.ADDED, eviction, None))
            elif previous is not eviction:
                changes.append(EvictionChange(ChangeType.MODIFIED, eviction, previous))
        self._commit(new, changes, resource_version, None)

    def upsert(self, obj: Any, resource_version: str | None = None) -> None:
        """Add or update one object (a watch event)."""
        old = self._snapshot.by_name
        eviction = self._parse(obj, self.rejected, "?")
        if eviction is None:
            self._commit(old, [], resource_version)
            return
        self.rejected.pop(eviction.name, None)
        previous = old.get(eviction.name)
        eviction = _same(previous, eviction)
        if previous is eviction:
            self._commit(old, [], resource_version)
            return
        kind = ChangeType.ADDED if previous is None else ChangeType.MODIFIED
        change = EvictionChange(kind, eviction, previous)
        self._commit({**old, eviction.name: eviction}, [change], resource_version)

    def delete(self, name: str, resource_version: str | None = None) -> None:
        """Remove one object by name (a watch event)."""
        old = self._snapshot.by_name
        self.rejected.pop(name, None)
        previous = old.get(name)
        if previous is None:
            self._commit(old, [], resource_version)
            return
        new = {n: e for n, e in old.items() if n != name}
        self._commit(
            new, [EvictionChange(ChangeType.DELETED, previous, previous)], resource_version
        )

    def advance(self, resource_version: str) -> None:
        """Record a newer source position with no change (a bookmark)."""
        self._commit(self._snapshot.by_name, [], resource_version)

    def absent(self, reason: str) -> None:
        """Evictions cannot be read (no Eviction CRD): none are known, and ``reason`` says why.

        The evictions held so far go (reported DELETED): they went with their CRD.
        The next complete set makes evictions available again.
        """
        old = self._snapshot.by_name
        self.ready = False
        self.resource_version = None
        self.rejected = {}
        changes = [EvictionChange(ChangeType.DELETED, e, e) for e in old.values()]
        self._commit({}, changes, None, reason)

    def _parse(self, obj: Any, rejected: dict[str, str], where: str) -> Eviction | None:
        try:
            return parse_eviction(obj)
        except ParseError as error:
            meta = obj.get("metadata") if isinstance(obj, Mapping) else None
            name = meta.get("name") if isinstance(meta, Mapping) else None
            key = name if isinstance(name, str) and name else where
            rejected[key] = str(error)
            log.warning("skipping Eviction object %s: %s", key, error)
            return None

    def _commit(
        self,
        evictions: Mapping[str, Eviction],
        changes: list[EvictionChange],
        resource_version: str | None,
        unavailable: str | None = None,
    ) -> None:
        """Publish a new snapshot if anything changed: the evictions, or whether they can
        be read (every write but :meth:`absent` says they can)."""
        if resource_version is not None:
            self.resource_version = resource_version
        old = self._snapshot
        if not changes and unavailable == old.unavailable:
            return
        self._snapshot = EvictionSnapshot(old.generation + 1, evictions, unavailable)
        self._listeners.tell(self._snapshot, changes)


def _same(previous: Eviction | None, new: Eviction) -> Eviction:
    """The record held already when ``new`` is equal to it: no change to report."""
    return previous if previous is not None and previous == new else new
