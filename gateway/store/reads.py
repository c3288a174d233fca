"""What an answer read from its snapshot, so that a cached answer lives as long as that does.

Keyed by the store generation, a cached answer is gone with the next change to
any host: under churn (a status patch per host and minute, 333 changes/s at
20,000 hosts) an answer lives 3 ms. But most answers read far less than the
fleet, and records are immutable, replaced on every change:

- an answer about a few hosts by name is the same while those hosts are the same
  records;
- a page of hosts in name order (the fleet's, or a filter's) read the page's
  records and which hosts are in the list: the names of a view the store
  carries from snapshot to snapshot (gateway.store.views), the same value while
  no host comes, goes, or passes or fails the filter;
- fleet totals read a ledger of sums, the same value while no change moved a sum.

Resolvers read through the request's :class:`~gateway.api.context.Context`, which
records what they read: hosts by name, views, or the whole snapshot (anything
else: a list sorted by a figure, totals of a filter's hosts, an index), whose
answer lives while the generation is the same.
"""

from __future__ import annotations

import dataclasses
import sys
import weakref
from collections.abc import Hashable, Iterable
from typing import Any

from gateway.domain.records import Hypervisor
from gateway.store.ordered import FLEET_ORDER
from gateway.store.snapshot import Snapshot
from gateway.store.views import Views

__all__ = ["Reads"]

#: What one read takes beside the others, estimated: its pair and its weak reference
#: (shared with other reads of the same record or view, counted in each).
_READ_BYTES = sys.getsizeof(("", None)) + sys.getsizeof(weakref.ref(Snapshot))


@dataclasses.dataclass(frozen=True, slots=True)
class Reads:
    """The generation of a fleet-wide answer; or the records a narrow one read by name
    (None: the name was not there), and the views it read in ``kept``.

    What they read is held weakly: a cache keeps the reads of thousands of answers,
    a page's a hundred records each, and held strongly every record replaced since
    would live on in them (at 20,000 hosts changing once a minute, the fleet twice
    over after a minute), as would every selection a client's filters made, long
    after the store let it go. A record or view let go is no longer the fleet's:
    the answer is no longer valid.
    """

    generation: int | None
    hosts: tuple[tuple[str, weakref.ref[Hypervisor] | None], ...] = ()
    #: Each view read: its key among ``kept``'s, and its value then (for the fleet's
    #: order, the generation since which the fleet has had the same hosts).
    views: tuple[tuple[Hashable, weakref.ref[Any] | int], ...] = ()
    kept: Views | None = None

    @classmethod
    def narrow(
        cls,
        hosts: Iterable[tuple[str, Hypervisor | None]],
        views: Iterable[tuple[Hashable, object]] = (),
        kept: Views | None = None,
    ) -> Reads:
        """The reads of an answer that read ``hosts`` by name and ``views`` (the values
        of :attr:`Ordered.view <gateway.store.ordered.Ordered.view>` and ledgers)."""
        held = tuple((name, None if r is None else weakref.ref(r)) for name, r in hosts)
        seen = tuple(
            (key, value if isinstance(value, int) else weakref.ref(value)) for key, value in views
        )
        return cls(None, held, seen, kept if seen else None)

    def nbytes(self) -> int:
        """The memory these reads take, estimated (the names are the records' own)."""
        own = sys.getsizeof(self) + sys.getsizeof(self.hosts) + sys.getsizeof(self.views)
        return own + _READ_BYTES * (len(self.hosts) + len(self.views))

    def valid(self, snapshot: Snapshot) -> bool:
        """Whether an answer computed from these reads is still the answer in ``snapshot``."""
        if self.generation is not None:
            return self.generation == snapshot.generation
        by_name = snapshot.by_name
        for name, held in self.hosts:
            record = by_name.get(name)
            if (record is not None) if held is None else (record is None or held() is not record):
                return False
        return all(self._same(snapshot, key, held) for key, held in self.views)

    def _same(self, snapshot: Snapshot, key: Hashable, held: weakref.ref[Any] | int) -> bool:
        """Whether view ``key`` of ``snapshot`` is the value read: a view not kept (none
        is made to check) is not."""
        if isinstance(held, int):
            return key == FLEET_ORDER and snapshot.members == held
        now = None if self.kept is None else self.kept.peek(snapshot, key)
        return now is not None and held() is now
