"""Fleet-wide capacity: per-resource totals over a group of hypervisors.

Totals add only what is known, and say over how many hosts (domain brief, section
4): booked, reserved and free over the hosts whose bookings are tracked; physical,
capacity, allocated, available and used over the hosts that know them; a figure no
host knows is None, never zero. ``unknown_capacity_hosts`` counts the hosts of the
group whose capacity is unknown, so that a dashboard can say how much of the fleet
the totals cover instead of silently treating the rest as empty.
"""

from __future__ import annotations

import dataclasses
import enum
from collections import defaultdict
from collections.abc import Callable, Iterable
from decimal import Decimal

from gateway.domain.quantity import CONTEXT
from gateway.domain.records import Hypervisor, ResourceCapacity

ZERO = Decimal(0)

__all__ = ["FleetGroup", "FleetResource", "Grouping", "fleet_capacity", "group"]


class Grouping(enum.Enum):
    NONE = "NONE"
    ZONE = "ZONE"
    REGION = "REGION"
    AGGREGATE = "AGGREGATE"
    BUILDING_BLOCK = "BUILDING_BLOCK"


_KEYS: dict[Grouping, Callable[[Hypervisor], Iterable[str | None]]] = {
    Grouping.NONE: lambda h: (None,),
    Grouping.ZONE: lambda h: (h.zone,),
    Grouping.REGION: lambda h: (h.region,),
    Grouping.AGGREGATE: lambda h: sorted({a.name for a in h.aggregates}) or (None,),
    Grouping.BUILDING_BLOCK: lambda h: (h.building_block,),
}


@dataclasses.dataclass(frozen=True, slots=True)
class FleetResource:
    name: str
    #: Hosts of the group that have this resource (in capacity, bookings or allocation).
    hypervisors: int
    #: Hosts of the group whose bookings are tracked / not tracked.
    tracked_hosts: int
    untracked_hosts: int
    physical: Decimal | None
    reserved: Decimal | None
    capacity: Decimal | None
    booked: Decimal | None
    free: Decimal | None
    allocated: Decimal | None
    available: Decimal | None
    used: Decimal | None
    #: Hosts of the group whose capacity of this resource is unknown.
    unknown_capacity_hosts: int
    overcommitted_hosts: int
    #: sum(used) / sum(capacity) over the hosts that know both.
    utilization: Decimal | None


@dataclasses.dataclass(frozen=True, slots=True)
class FleetGroup:
    key: str | None
    hypervisors: tuple[Hypervisor, ...]
    resources: dict[str, FleetResource]


def group(
    hypervisors: Iterable[Hypervisor], grouping: Grouping
) -> list[tuple[str | None, list[Hypervisor]]]:
    """The hosts per group key, ordered by key, hosts without the key last.

    NONE gives one group even over no hosts at all; AGGREGATE puts a host in each
    of its aggregates.
    """
    members: dict[str | None, list[Hypervisor]] = defaultdict(list)
    if grouping is Grouping.NONE:
        members[None] = []
    for hypervisor in hypervisors:
        for key in _KEYS[grouping](hypervisor):
            members[key].append(hypervisor)
    ordered = sorted(members, key=lambda k: (k is None, k or ""))
    return [(k, members[k]) for k in ordered]


def fleet_capacity(hypervisors: Iterable[Hypervisor], grouping: Grouping) -> list[FleetGroup]:
    """Groups (ordered by key, hosts without the key last) with per-resource totals."""
    return [
        FleetGroup(k, tuple(hosts), _totals(hosts)) for k, hosts in group(hypervisors, grouping)
    ]


def _totals(hypervisors: list[Hypervisor]) -> dict[str, FleetResource]:
    per_resource: dict[str, list[ResourceCapacity]] = defaultdict(list)
    for hypervisor in hypervisors:
        for resource in hypervisor.resources.values():
            per_resource[resource.name].append(resource)
    tracked = sum(1 for h in hypervisors if h.bookings_tracked)
    return {
        name: _total(name, rows, tracked, len(hypervisors))
        for name, rows in sorted(per_resource.items())
    }


def _total(name: str, rows: list[ResourceCapacity], tracked: int, hosts: int) -> FleetResource:
    # A tracked host without this resource has booked and reserved none of it: 0, known.
    nothing_booked = ZERO if tracked else None
    both = [r for r in rows if r.used is not None and r.capacity is not None]
    used_of_both = _sum(r.used for r in both)
    capacity_of_both = _sum(r.capacity for r in both)
    return FleetResource(
        name=name,
        hypervisors=len(rows),
        tracked_hosts=tracked,
        untracked_hosts=hosts - tracked,
        physical=_sum(r.physical for r in rows),
        reserved=_sum((r.reserved for r in rows), nothing_booked),
        capacity=_sum(r.capacity for r in rows),
        booked=_sum((r.booked for r in rows), nothing_booked),
        free=_sum(r.free for r in rows),
        allocated=_sum(r.allocated for r in rows),
        available=_sum(r.available for r in rows),
        used=_sum(r.used for r in rows),
        unknown_capacity_hosts=hosts - sum(1 for r in rows if r.capacity is not None),
        overcommitted_hosts=sum(1 for r in rows if r.overcommitted),
        utilization=(
            CONTEXT.divide(used_of_both, capacity_of_both)
            if used_of_both is not None and capacity_of_both
            else None
        ),
    )


def _sum(values: Iterable[Decimal | None], start: Decimal | None = None) -> Decimal | None:
    """The exact sum of the known values; ``start`` (None: unknown) when none is known."""
    total = start
    for value in values:
        if value is not None:
            total = value if total is None else CONTEXT.add(total, value)
    return total
