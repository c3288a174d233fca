"""The GraphQL view of fleet totals (``fleetCapacity`` and its subscription)."""

from collections.abc import Callable
from typing import Annotated

import strawberry

from gateway.api.enums import FleetGrouping
from gateway.api.filters import HypervisorFilter, apply_filter
from gateway.api.scalars import Quantity
from gateway.domain import fleet
from gateway.domain.flavors import NO_CATALOG, Catalog
from gateway.domain.ledger import Ledger, Tally
from gateway.store.snapshot import Snapshot
from gateway.store.views import Views

__all__ = ["FleetGroup", "FleetGrouping", "FleetResource", "fleet_groups"]


@strawberry.type(
    description="Fleet totals of one resource over a group of hypervisors. Each figure sums "
    "the hosts that know it: booked, reserved and free over the hosts whose bookings are "
    "tracked (trackedHosts), the others over the hosts with a known value; a figure no host "
    "knows is null, never 0. An untracked host's capacity never counts as free: its best "
    "known figure is in available."
)
class FleetResource:
    name: str = strawberry.field(description="Resource key.")
    hypervisors: int = strawberry.field(description="Hosts in the group that have this resource.")
    tracked_hosts: int = strawberry.field(
        description="Hosts in the group whose bookings are tracked: booked, reserved and free "
        "sum over them."
    )
    untracked_hosts: int = strawberry.field(
        description="Hosts in the group whose bookings are not tracked (no spec.bookings)."
    )
    physical: Quantity | None = strawberry.field(description="Sum of known physical capacity.")
    reserved: Quantity | None = strawberry.field(
        description="Sum of reservations of the tracked hosts."
    )
    capacity: Quantity | None = strawberry.field(description="Sum of known schedulable capacity.")
    booked: Quantity | None = strawberry.field(
        description="Sum of consumer bookings of the tracked hosts."
    )
    free: Quantity | None = strawberry.field(
        description="Sum of known free capacity (Placement's view, tracked hosts only; negative "
        "free of over-subscribed hosts included)."
    )
    allocated: Quantity | None = strawberry.field(description="Sum of reported libvirt usage.")
    available: Quantity | None = strawberry.field(
        description="Sum of known best known figures: free of the tracked hosts, unallocated of "
        "the others (negative ones included)."
    )
    used: Quantity | None = strawberry.field(
        description="Sum of known used amounts: booked of the tracked hosts, allocated of the "
        "others."
    )
    unknown_capacity_hosts: int = strawberry.field(
        description="Hosts in the group whose capacity of this resource is unknown (no status, "
        "or a key their status does not carry): left out of physical, capacity, free and "
        "available."
    )
    overcommitted_hosts: int = strawberry.field(description="Hosts with available < 0.")

    @strawberry.field(
        description="sum(used) / sum(capacity) over the hosts that know both; null when none "
        "does (or their capacity sums to 0)."
    )
    def utilization(self, root: strawberry.Parent[fleet.FleetResource]) -> float | None:
        value = root.utilization
        return None if value is None else float(value)


@strawberry.type(description="Totals for one group (a zone, region, aggregate, building block).")
class FleetGroup:
    key: str | None = strawberry.field(
        description="The group's zone/region/aggregate/building block; null for hosts without one "
        "(and for the single group of NONE)."
    )

    hypervisor_count: int = strawberry.field(description="Number of hypervisors in the group.")
    tracked_hosts: int = strawberry.field(
        description="Hosts in the group whose bookings are tracked."
    )
    untracked_hosts: int = strawberry.field(
        description="Hosts in the group whose bookings are not tracked."
    )

    @strawberry.field(description="Per-resource totals.")
    def resources(self, root: strawberry.Parent[fleet.FleetGroup]) -> list[FleetResource]:
        return list(root.resources.values())  # type: ignore[arg-type]

    @strawberry.field(description="Totals of one resource, or null.")
    def resource(
        self,
        root: strawberry.Parent[fleet.FleetGroup],
        name: Annotated[str, strawberry.argument(description="Resource key, e.g. cpu.")],
    ) -> FleetResource | None:
        return root.resources.get(name)  # type: ignore[return-value]


def fleet_groups(
    views: Views,
    snapshot: Snapshot,
    where: HypervisorFilter | None,
    group_by: FleetGrouping | None,
    ledger: Callable[[Tally], Ledger] | None = None,
    catalog: Catalog = NO_CATALOG,
) -> list[fleet.FleetGroup]:
    """Totals of the hosts ``where`` selects in ``snapshot``, grouped.

    The whole fleet's are kept per change (a ledger of the store's ``views``, read
    through ``ledger`` when given: a query's context); a filter's hosts are counted
    for the question (``catalog``: the flavors it may name).
    """
    grouping = group_by or FleetGrouping.NONE
    if where is None:
        tally = fleet.tally(grouping)
        sums = views.ledger(snapshot, tally) if ledger is None else ledger(tally)
        return fleet.fleet_groups(sums, grouping)
    return fleet.fleet_capacity(apply_filter(views, snapshot, where, catalog), grouping)
