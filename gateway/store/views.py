"""The views of the fleet a store keeps: made once, carried per change, dropped unasked.

A view is what a question makes of a whole fleet: a ledger of totals, the hosts
a filter selects, the index of consumers. Made afresh, each is a pass over
every host, and under churn every change makes a new snapshot. So the store's
:class:`Views` keep them, in one place and by one rule:

- **Made once** per key and snapshot, however many questions ask meanwhile
  (:class:`~gateway.store.carried.Making`).
- **Carried** to each new snapshot by the change that made it
  (``apply(removed, added)``), and to a snapshot published while a pass ran by
  the :class:`~gateway.store.carried.Journal` of the changes between.
- **Kept by generation**, for as long as its snapshot is referenced (a query, a
  subscriber's queue): a query holding an old snapshot reads the views of that
  fleet. Snapshots are plain values, and the views never change one.
- **Dropped unasked.** Carrying a status patch costs about a fifth of making a
  host's part afresh (the consumer index: 30 to 45 against 150 to 200 us at
  20,000 hosts), so a view unasked through :data:`UNASKED_PER_HOST` changes per
  host (:data:`KEEP_UNASKED` at least) has cost in carrying about what making
  it again costs: it is let go, and a store asked less often pays at most about
  twice what it would if it knew when questions come.
- **Bounded** in views and in bytes, the least recently asked let go first:
  keys are client input (every distinct filter, every project's slot counts).
"""

from __future__ import annotations

import collections
import functools
import logging
import threading
import weakref
from collections.abc import Callable, Hashable, Iterable

from gateway.domain.bounded import Figures
from gateway.domain.ledger import Ledger, Tally
from gateway.domain.records import Hypervisor
from gateway.store.carried import Carried, CarriedT, Journal, Making, Step
from gateway.store.consumers import ConsumerIndex, Consumers
from gateway.store.ordered import Ordered
from gateway.store.selections import Predicate, Selection
from gateway.store.snapshot import Snapshot

__all__ = ["KEEP_UNASKED", "MAX_BYTES", "MAX_VIEWS", "UNASKED_PER_HOST", "Views", "ledger_key"]

log = logging.getLogger(__name__)

#: Changes a view is carried through unasked, per host of the fleet, and at least.
UNASKED_PER_HOST = 4
KEEP_UNASKED = 1000
#: Views kept at most: every one is carried through every change.
MAX_VIEWS = 32
#: Bytes the views may take: the consumer index of 20,000 hosts with 40 bookings
#: each is about 90 MiB; a ledger or a selection well under one.
MAX_BYTES = 128 * 2**20

_CONSUMERS = ("consumers",)


class _Kept:
    """One view by the generations it is held for (value, its bytes), when it was
    last asked, and the bytes of its values, each counted once (a view no change
    touched is the same value under several generations)."""

    __slots__ = ("_holding", "by_generation", "nbytes", "used")

    def __init__(self, used: int) -> None:
        self.by_generation: dict[int, tuple[Carried, int]] = {}
        self.used = used
        self.nbytes = 0
        # Per value (by id: each is held here meanwhile), the generations holding it.
        self._holding: dict[int, int] = {}

    def put(self, generation: int, value: Carried, size: int) -> int:
        """Hold ``value`` for ``generation`` unless one is held; the bytes it added."""
        if generation in self.by_generation:
            return 0
        self.by_generation[generation] = (value, size)
        holding = self._holding.get(id(value), 0)
        self._holding[id(value)] = holding + 1
        added = 0 if holding else size
        self.nbytes += added
        return added

    def drop(self, generation: int) -> int:
        """Let the value of ``generation`` go; the bytes that freed."""
        found = self.by_generation.pop(generation, None)
        if found is None:
            return 0
        value, size = found
        holding = self._holding.pop(id(value)) - 1
        if holding:
            self._holding[id(value)] = holding
            return 0
        self.nbytes -= size
        return size


class Views:
    """The views of one store's snapshots, by key and generation.

    Thread-safe: questions ask from worker threads and from the event loop; the
    store publishes from the loop. A pass, and carrying what it made to the current
    snapshot, run outside the lock: the store never waits for them to publish.
    """

    name = "views"

    def __init__(
        self,
        max_views: int = MAX_VIEWS,
        max_bytes: int = MAX_BYTES,
        *,
        keep_unasked: int = KEEP_UNASKED,
        unasked_per_host: int = UNASKED_PER_HOST,
    ) -> None:
        self.max_views = max_views
        self.max_bytes = max_bytes
        self.keep_unasked = keep_unasked
        self.unasked_per_host = unasked_per_host
        self.journal = Journal()
        self._making = Making(self.journal)
        self._lock = threading.Lock()
        self._kept: dict[Hashable, _Kept] = {}
        #: The store's snapshots still referenced anywhere, by generation, and the
        #: generations of those let go since the last publication. Told by the
        #: references' callbacks, in whichever thread let go: only appended to there.
        #: A publication lets their views go, without looking at every generation.
        self._live: dict[int, weakref.ref[Snapshot]] = {}
        self._gone: collections.deque[int] = collections.deque()
        self._current: Snapshot | None = None
        self._bytes = 0
        #: Questions that found their view, views made (or carried from a pass in
        #: flight), views let go for room.
        self.hits = 0
        self.made = 0
        self.evictions = 0

    def ledger(self, snapshot: Snapshot, tally: Tally) -> Ledger:
        """The sums ``tally`` keeps over the fleet of ``snapshot``."""
        return self.get(
            snapshot, ledger_key(tally), lambda: Ledger.of(tally, snapshot.by_name.values())
        )

    def keeps(self, snapshot: Snapshot, tally: Tally) -> bool:
        """Whether the sums ``tally`` keeps are counted for ``snapshot`` already."""
        return self.has(snapshot, ledger_key(tally))

    def selection(
        self,
        snapshot: Snapshot,
        key: Hashable,
        predicate: Predicate,
        candidates: Iterable[Hypervisor],
    ) -> Ordered:
        """The hosts ``predicate`` (a filter, named by ``key``) selects, in name order:
        judged on ``candidates`` (in name order, every host it could select) the first
        time."""
        kept_as = ("selection", key)
        found = self.get(snapshot, kept_as, lambda: Selection.of(predicate, candidates))
        return Ordered(found.names, snapshot.by_name, (kept_as, found))

    def selects(self, snapshot: Snapshot, key: Hashable) -> bool:
        """Whether the hosts of the filter named ``key`` are judged for ``snapshot``."""
        return self.has(snapshot, ("selection", key))

    def consumers(self, snapshot: Snapshot) -> Consumers:
        """Consumer UUID -> its bookings, on every hypervisor it is booked on."""
        index = self.get(snapshot, _CONSUMERS, lambda: ConsumerIndex.of(snapshot.ordered))
        return Consumers(index, snapshot.by_name)

    def indexes_consumers(self, snapshot: Snapshot, *, ordered: bool = False) -> bool:
        """Whether the consumers are indexed for ``snapshot`` already (and, ``ordered``,
        their UUIDs in order or nearly): a question about consumers then reads."""
        with self._lock:
            kept = self._kept.get(_CONSUMERS)
            found = None if kept is None else kept.by_generation.get(snapshot.generation)
        if found is None:
            return False
        index: ConsumerIndex = found[0]  # type: ignore[assignment]  # the key says its kind
        return not ordered or index.ordered()

    def get(self, snapshot: Snapshot, key: Hashable, make: Callable[[], CarriedT]) -> CarriedT:
        """The view ``key`` of ``snapshot``: kept, carried from the one of an earlier
        snapshot kept, or made by ``make`` (once for every question asking meanwhile),
        and kept from now on."""
        generation = snapshot.generation
        with self._lock:
            kept = self._kept.get(key)
            found = None if kept is None else kept.by_generation.get(generation)
            if found is not None:
                kept.used = max(kept.used, generation)  # type: ignore[union-attr]
                self.hits += 1
                return found[0]  # type: ignore[return-value]  # the key says its kind
            earlier = None if kept is None else _latest_before(kept, generation)
        value = None if earlier is None else self._carried(key, *earlier, generation)
        if value is None:
            value = self._making.once(key, generation, make)
        self._keep(snapshot, key, value)
        return value  # type: ignore[return-value]  # the key says its kind

    def _carried(self, key: Hashable, since: int, value: Carried, until: int) -> Carried | None:
        """``value`` of generation ``since`` brought to ``until`` by the journal's steps.

        A question holds the snapshot current when it began; under churn the view it
        asks for may have been made (or kept) only for later ones meanwhile: at 333
        changes a second, every query of a pass's duration made a pass of its own.
        """
        steps = self.journal.since(since, until)
        return None if steps is None else _brought(key, value, steps)

    def has(self, snapshot: Snapshot, key: Hashable) -> bool:
        """Whether the view ``key`` of ``snapshot`` is kept."""
        with self._lock:
            kept = self._kept.get(key)
            return kept is not None and snapshot.generation in kept.by_generation

    def peek(self, snapshot: Snapshot, key: Hashable) -> Carried | None:
        """The view ``key`` of ``snapshot`` if kept, else None (nothing is made): for an
        answer made from it before, still the answer while the view is the same value.
        Asked for all the same, so it goes on being carried."""
        generation = snapshot.generation
        with self._lock:
            kept = self._kept.get(key)
            found = None if kept is None else kept.by_generation.get(generation)
            if found is None:
                return None
            kept.used = max(kept.used, generation)  # type: ignore[union-attr]
            return found[0]

    def published(self, snapshot: Snapshot, step: Step | None) -> None:
        """The store's new snapshot, made from the one before by ``step`` (None: a
        change too large to carry anything through): every view asked lately is
        carried to it, and those of snapshots no longer referenced are let go."""
        with self._lock:
            before = self._current
            self._current = snapshot
            generation = snapshot.generation
            told = functools.partial(_told, self._gone, generation)
            self._live[generation] = weakref.ref(snapshot, told)
            self.journal.record(snapshot.generation, step)
            self._let_go()
            allowance = max(self.unasked_per_host * len(snapshot), self.keep_unasked)
            for key, kept in self._kept.items():
                asked = snapshot.generation - kept.used <= allowance
                if step is not None and before is not None and asked:
                    self._carry(key, kept, before.generation, snapshot.generation, step)
            self._bound()

    def figures(self) -> Figures:
        with self._lock:
            return Figures(len(self._kept), self._bytes, self.hits, self.evictions)

    @property
    def snapshots_live(self) -> int:
        """The store's snapshots still referenced (by a query, a subscriber, the store)."""
        with self._lock:
            self._let_go()
            return len(self._live)

    def _let_go(self) -> None:
        """Forget the generations let go since the last look, and their views (under
        the lock): a view no generation holds any more is let go too."""
        while self._gone:
            generation = self._gone.popleft()
            del self._live[generation]
            for key, kept in list(self._kept.items()):
                self._bytes -= kept.drop(generation)
                if not kept.by_generation:
                    del self._kept[key]

    def _keep(self, snapshot: Snapshot, key: Hashable, value: Carried) -> None:
        """Keep what a question made, and carry it to the current snapshot."""
        size = value.nbytes()
        generation = snapshot.generation
        with self._lock:
            self.made += 1
            live = self._live.get(generation)
            if live is None or live() is not snapshot or size > self.max_bytes:
                return  # not one of this store's snapshots, or too large to keep
            kept = self._kept.get(key)
            if kept is None:
                kept = self._kept[key] = _Kept(generation)
            self._bytes += kept.put(generation, value, size)
            kept.used = max(kept.used, generation)
            self._bound()
        # Outside the lock, so that the store never waits for it to publish: carry
        # until the snapshot reached is the current one. The journal records a change
        # before the change is published: a snapshot seen here has its step.
        while True:
            with self._lock:
                current = self._current
                kept = self._kept.get(key)
                if current is None or kept is None or current.generation in kept.by_generation:
                    return
                steps = self.journal.since(generation, current.generation)
                found = kept.by_generation.get(generation)
                if steps is None or found is None:
                    return
            brought = _brought(key, found[0], steps)
            if brought is None:
                return
            with self._lock:
                kept = self._kept.get(key)
                if kept is None:
                    return
                self._bytes += kept.put(current.generation, brought, brought.nbytes())
                generation = current.generation
                self._bound()

    def _carry(self, key: Hashable, kept: _Kept, since: int, until: int, step: Step) -> None:
        """Bring the view held at ``since`` to ``until`` by ``step``, unless it is there."""
        found = kept.by_generation.get(since)
        if found is None or until in kept.by_generation:
            return
        value = _brought(key, found[0], [step])
        if value is not None:
            size = found[1] if value is found[0] else value.nbytes()
            self._bytes += kept.put(until, value, size)

    def _bound(self) -> None:
        """Let the least recently asked views go until the rest are within bounds."""
        if len(self._kept) <= self.max_views and self._bytes <= self.max_bytes:
            return
        for key, kept in sorted(self._kept.items(), key=_asked):
            if len(self._kept) <= self.max_views and self._bytes <= self.max_bytes:
                break
            del self._kept[key]
            self._bytes -= kept.nbytes
            self.evictions += 1


def ledger_key(tally: Tally) -> Hashable:
    """The key of the ledger ``tally`` keeps, among the views."""
    return ("ledger", tally)


def _brought(key: Hashable, value: Carried, steps: list[Step]) -> Carried | None:
    """``value`` through ``steps``; None when it fails on a changed host."""
    try:
        for step in steps:
            value = value.apply(*step)
    except Exception:  # a filter that fails on a new record: judged again when asked
        log.exception("view %r failed on a changed host; not carried", key)
        return None
    return value


def _latest_before(kept: _Kept, generation: int) -> tuple[int, Carried] | None:
    """The newest generation before ``generation`` that ``kept`` holds, and its value."""
    earlier = [g for g in kept.by_generation if g < generation]
    if not earlier:
        return None
    latest = max(earlier)
    return latest, kept.by_generation[latest][0]


def _told(gone: collections.deque[int], generation: int, _: weakref.ref[Snapshot]) -> None:
    """A snapshot's reference is dead: its generation is let go at the next look."""
    gone.append(generation)


def _asked(item: tuple[Hashable, _Kept]) -> int:
    return item[1].used
