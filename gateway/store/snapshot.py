"""Snapshots: the fleet at one store generation, a plain value.

A snapshot's fleet never changes: a query that holds one sees one consistent
fleet however the store moves on. It indexes its own hosts by zone, aggregate
and trait (built once, by the first question that needs them: under churn a
snapshot nobody queries costs no indexing at all). What questions make of the
whole fleet and the store carries from change to change (ledgers, selections,
the consumer index) is the store's :class:`~gateway.store.views.Views`, kept by
generation: a snapshot knows nothing of the store that made it.
"""

from __future__ import annotations

import dataclasses
import enum
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from functools import cached_property
from typing import Any

from gateway.domain.records import Hypervisor
from gateway.store.ordered import FLEET_ORDER, Ordered
from gateway.store.shards import ShardedMap

__all__ = ["Change", "ChangeType", "Snapshot"]


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
    """A view of the fleet at one store generation: its hosts never change."""

    def __init__(
        self,
        generation: int,
        hypervisors: ShardedMap[Hypervisor],
        resource_version: str | None,
        same_hosts: Snapshot | None = None,
    ) -> None:
        self.generation = generation
        self.by_name = hypervisors
        #: The source's position at this change (a list or event resourceVersion).
        self.resource_version = resource_version
        #: The generation since which the fleet has had these very hosts (some changed).
        self.members: int = generation if same_hosts is None else same_hosts.members
        if same_hosts is not None and "names" in same_hosts.__dict__:  # the same order
            self.__dict__["names"] = same_hosts.names

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
        return Ordered(self.names, self.by_name, (FLEET_ORDER, self.members))

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
