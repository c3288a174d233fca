"""The hosts a filter selects, kept per change instead of found again per question.

A dashboard asks the same filtered question every few seconds (the hosts that
can fit a flavor, the hosts of a zone that are in maintenance), and under churn
every change makes a new snapshot: a scan of every host per question, 10 fit
questions a second over 5,000 hosts, was most of a replica's work. A filter's
predicate is a function of one host's record, so the hosts it selects change
only where a host changed: a :class:`Selection` is carried from snapshot to
snapshot by the store's views (:mod:`gateway.store.views`: the changed hosts
judged again), for as long as some question keeps asking it.
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Callable, Iterable

from gateway.domain.records import Hypervisor

__all__ = ["Predicate", "Selection"]

Predicate = Callable[[Hypervisor], bool]


class Selection:
    """The names, sorted, of the hosts ``predicate`` selects."""

    # Weakly referable: an answer's reads name the selection it read (gateway.store.reads).
    __slots__ = ("__weakref__", "names", "predicate")

    def __init__(self, predicate: Predicate, names: tuple[str, ...]) -> None:
        self.predicate = predicate
        self.names = names

    @classmethod
    def of(cls, predicate: Predicate, hosts: Iterable[Hypervisor]) -> Selection:
        """Judged on ``hosts`` (in name order): every host the filter could select."""
        return cls(predicate, tuple(h.name for h in hosts if predicate(h)))

    def apply(self, removed: Iterable[Hypervisor], added: Iterable[Hypervisor]) -> Selection:
        """The selection after a change: its old records out, its new ones judged.

        Itself when the change selects the hosts it selected (a status patch, mostly):
        a copy of the names per change was a pass over the selection, 20,000 names
        for a filter most hosts pass, for every change.
        """
        gone = [h.name for h in removed if self._selects(h.name)]
        came = [h.name for h in added if self.predicate(h)]
        if sorted(gone) == sorted(came):
            return self
        names = list(self.names)
        for name in gone:
            del names[bisect.bisect_left(names, name)]
        for name in came:
            bisect.insort(names, name)
        return Selection(self.predicate, tuple(names))

    def _selects(self, name: str) -> bool:
        i = bisect.bisect_left(self.names, name)
        return i < len(self.names) and self.names[i] == name

    def nbytes(self) -> int:
        """A reference per host it selects (the names are the records' own)."""
        return sys.getsizeof(self.names)
