"""Fleet-wide capacity: per-resource totals over a group of hypervisors.

Totals add only what is known. A host whose physical capacity is unknown still
adds its booked and reserved amounts, but not a capacity or free figure, and is
counted in ``unknown_capacity_hosts`` so that a dashboard can say how much of the
fleet the free figure covers instead of silently treating it as zero.
"""

from __future__ import annotations

import dataclasses
import enum
from collections import defaultdict
from collections.abc import Callable, Iterable
from decimal import Decimal

from gateway.capacity import sum_known
from gateway.domain import Hypervisor, ResourceCapacity
from gateway.quantity import CONTEXT

__all__ = ["FleetGroup", "FleetResource", "Grouping", "fleet_capacity"]


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
    hypervisors: int
    physical: Decimal
    reserved: Decimal
    capacity: Decimal
    booked: Decimal
    #: Booked on the hosts whose capacity is known: the numerator of utilization.
    booked_on_known: Decimal
    free: Decimal
    allocated: Decimal
    unknown_capacity_hosts: int
    overcommitted_hosts: int

    @property
    def utilization(self) -> Decimal | None:
        """Booked over capacity, for the hosts whose capacity is known."""
        return CONTEXT.divide(self.booked_on_known, self.capacity) if self.capacity else None


@dataclasses.dataclass(frozen=True, slots=True)
class FleetGroup:
    key: str | None
    hypervisors: tuple[Hypervisor, ...]
    resources: dict[str, FleetResource]


def fleet_capacity(hypervisors: Iterable[Hypervisor], grouping: Grouping) -> list[FleetGroup]:
    """Groups (ordered by key, hosts without the key last) with per-resource totals."""
    members: dict[str | None, list[Hypervisor]] = defaultdict(list)
    if grouping is Grouping.NONE:
        members[None] = []  # one total, even over no hosts at all
    for hypervisor in hypervisors:
        for key in _KEYS[grouping](hypervisor):
            members[key].append(hypervisor)
    ordered = sorted(members, key=lambda k: (k is None, k or ""))
    return [FleetGroup(k, tuple(members[k]), _totals(members[k])) for k in ordered]


def _totals(hypervisors: list[Hypervisor]) -> dict[str, FleetResource]:
    per_resource: dict[str, list[ResourceCapacity]] = defaultdict(list)
    for hypervisor in hypervisors:
        for resource in hypervisor.resources.values():
            per_resource[resource.name].append(resource)
    return {name: _total(name, rows) for name, rows in sorted(per_resource.items())}


def _total(name: str, rows: list[ResourceCapacity]) -> FleetResource:
    physical, unknown = sum_known(r.physical for r in rows)
    capacity, _ = sum_known(r.capacity for r in rows)
    free, _ = sum_known(r.free for r in rows)
    allocated, _ = sum_known(r.allocated for r in rows)
    booked_on_known, _ = sum_known(r.booked for r in rows if r.capacity is not None)
    return FleetResource(
        name=name,
        hypervisors=len(rows),
        physical=physical,
        reserved=_sum(r.reserved for r in rows),
        capacity=capacity,
        booked=_sum(r.booked for r in rows),
        free=free,
        allocated=allocated,
        unknown_capacity_hosts=unknown,
        overcommitted_hosts=sum(1 for r in rows if r.overcommitted),
        booked_on_known=booked_on_known,
    )


def _sum(values: Iterable[Decimal]) -> Decimal:
    return sum_known(values)[0]
