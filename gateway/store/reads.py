"""What an answer read from its snapshot, so that a cached answer lives as long as that does.

Keyed by the store generation, a cached answer is gone with the next change to
any host: under churn (a status patch per host and minute, 83 changes/s at
5,000 hosts) an answer about one host lives about 12 ms. An answer that read
only a few hosts by name is as valid as before while those hosts are the same
records (records are immutable and replaced on every change), and one that
read the fleet (a list, totals, an index) while the generation is the same.

Resolvers read through the request's :class:`~gateway.api.context.Context`, which
records what they read: by name, or the whole snapshot.
"""

from __future__ import annotations

import dataclasses

from gateway.domain.records import Hypervisor
from gateway.store.snapshot import Snapshot

__all__ = ["Reads"]


@dataclasses.dataclass(frozen=True, slots=True)
class Reads:
    """The generation of a fleet-wide answer, or the records a narrow one read by name
    (None: the name was not there)."""

    generation: int | None
    hosts: tuple[tuple[str, Hypervisor | None], ...] = ()

    def valid(self, snapshot: Snapshot) -> bool:
        """Whether an answer computed from these reads is still the answer in ``snapshot``."""
        if self.generation is not None:
            return self.generation == snapshot.generation
        by_name = snapshot.by_name
        return all(by_name.get(name) is record for name, record in self.hosts)
