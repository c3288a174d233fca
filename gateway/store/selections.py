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

    __slots__ = ("names", "predicate")

    def __init__(self, predicate: Predicate, names: tuple[str, ...]) -> None:
        self.predicate = predicate
        self.names = names

    @classmethod
    def of(cls, predicate: Predicate, hosts: Iterable[Hypervisor]) -> Selection:
        """Judged on ``hosts`` (in name order): every host the filter could select."""
        return cls(predicate, tuple(h.name for h in hosts if predicate(h)))

    def apply(self, removed: Iterable[Hypervisor], added: Iterable[Hypervisor]) -> Selection:
        """The selection after a change: its old records out, its new ones judged."""
        names = list(self.names)
        for hypervisor in removed:
            i = bisect.bisect_left(names, hypervisor.name)
            if i < len(names) and names[i] == hypervisor.name:
                del names[i]
        for hypervisor in added:
            if self.predicate(hypervisor):
                bisect.insort(names, hypervisor.name)
        return Selection(self.predicate, tuple(names))

    def nbytes(self) -> int:
        """A reference per host it selects (the names are the records' own)."""
        return sys.getsizeof(self.names)
