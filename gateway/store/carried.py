"""What questions make from a whole fleet, made once and carried from change to change.

A ledger (fleet totals by a grouping) or a selection (the hosts a filter
selects) costs a pass over every host the first time it is asked: half a second
at 20,000 hosts. Two things keep that pass from being paid again:

- **Made once.** The first question is never alone: a hundred
  ``fleetCapacityChanged`` subscribers and twenty dashboards ask for the zone
  totals in the same second, each on a worker thread of its own. Each counting
  for itself, they shared one core for seconds, and the event loop, left with
  a sliver of the interpreter lock, stalled every other answer (p99 over a
  second at 20,000 hosts). :class:`Making` lets the first pass run and the
  others wait for it, then take its result, carried to their own snapshot.
- **Carried, not made again.** The store moves on while a pass runs (ten
  changes a second). What was made on a past snapshot is brought to the later
  ones by the :class:`Journal` of the changes between (``apply(removed,
  added)``), so the next question finds it.

:class:`~gateway.store.views.Views` holds what is made and decides what is carried.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from typing import Protocol, Self, TypeVar

from gateway.domain.records import Hypervisor

__all__ = ["Carried", "CarriedT", "Journal", "Making", "Step"]


class Carried(Protocol):
    """A value derived from a whole fleet that a change set brings up to date."""

    def apply(self, removed: Iterable[Hypervisor], added: Iterable[Hypervisor]) -> Self: ...

    def nbytes(self) -> int:
        """The memory it holds of its own (not the records it names), estimated."""
        ...


#: A value of one kind of :class:`Carried` (a ledger, a selection, an index).
CarriedT = TypeVar("CarriedT", bound=Carried)

#: One change set: (the records it removed, the records it added).
Step = tuple[list[Hypervisor], list[Hypervisor]]


class Journal:
    """The last changes, by the generation they made: (records removed, records added).

    A value made on a snapshot that the store has moved past meanwhile (under
    churn, a pass over the fleet outlasts many changes) is brought up to date
    with them instead of being made again on the next snapshot. Bounded: the
    journal holds the old records of its changes alive. A large change set is
    recorded as a gap, across which nothing is carried.
    """

    def __init__(self, size: int = 1024) -> None:
        self._entries: deque[tuple[int, Step | None]] = deque(maxlen=size)

    def record(self, generation: int, step: Step | None) -> None:
        self._entries.append((generation, step))

    def since(self, generation: int, until: int) -> list[Step] | None:
        """The steps after ``generation`` up to ``until``; None when some are not known."""
        steps = [s for g, s in list(self._entries) if generation < g <= until]
        if len(steps) != until - generation or None in steps:
            return None
        return steps  # type: ignore[return-value]

    def carry(self, value: CarriedT, generation: int, until: int) -> CarriedT | None:
        """``value`` made at ``generation``, brought to ``until``; None when the journal
        no longer has every change between (a gap, or too long ago)."""
        steps = self.since(generation, until)
        if steps is None:
            return None
        for step in steps:
            value = value.apply(*step)
        return value


class _Pass:
    """One pass in flight: the generation it reads, and its result once done."""

    __slots__ = ("done", "generation", "value")

    def __init__(self, generation: int) -> None:
        self.generation = generation
        self.done = threading.Event()
        self.value: Carried | None = None


class Making:
    """Passes over the fleet in flight, one per key, shared by the questions that need them.

    Thread-safe: questions run on worker threads and on the event loop. A waiter
    on the loop blocks it for the rest of a pass it would otherwise make itself.
    """

    def __init__(self, journal: Journal) -> None:
        self._journal = journal
        self._lock = threading.Lock()
        self._passes: dict[Hashable, _Pass] = {}

    def once(self, key: Hashable, generation: int, make: Callable[[], CarriedT]) -> CarriedT:
        """``make()``'s value for the snapshot at ``generation``: from the pass in
        flight for ``key`` when there is one that read this snapshot or an earlier
        one (carried here), else from a pass of its own that later askers share."""
        with self._lock:
            running = self._passes.get(key)
            mine = running is None
            if running is None:
                running = self._passes[key] = _Pass(generation)
        if mine:
            return self._run(key, running, make)
        if running.generation <= generation:
            running.done.wait()
            if running.value is not None:
                carried = self._journal.carry(running.value, running.generation, generation)
                if carried is not None:
                    return carried  # type: ignore[return-value]  # the same key: the same kind
        return make()  # a pass over a later snapshot, a failed one, or too far behind

    def _run(self, key: Hashable, running: _Pass, make: Callable[[], CarriedT]) -> CarriedT:
        try:
            value = make()
            running.value = value
            return value
        finally:
            with self._lock:
                del self._passes[key]
            running.done.set()
