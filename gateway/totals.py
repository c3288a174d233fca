"""The GraphQL view of fleet totals (``fleetCapacity`` and its subscription)."""

from enum import Enum
from typing import Annotated

import strawberry

from gateway import fleet
from gateway.filters import HypervisorFilter, apply_filter
from gateway.store import Snapshot
from gateway.types import Quantity

__all__ = ["FleetGroup", "FleetGrouping", "FleetResource", "fleet_groups"]


@strawberry.enum(description="How to group fleet totals.")
class FleetGrouping(Enum):
    NONE = strawberry.enum_value("NONE", description="One total for all selected hosts.")
    ZONE = strawberry.enum_value("ZONE", description="By topology.kubernetes.io/zone.")
    REGION = strawberry.enum_value("REGION", description="By topology.kubernetes.io/region.")
    AGGREGATE = strawberry.enum_value(
        "AGGREGATE", description="By aggregate name; a host counts in each of its aggregates."
    )
    BUILDING_BLOCK = strawberry.enum_value(
        "BUILDING_BLOCK", description="By kubernetes.metal.cloud.sap/bb."
    )


@strawberry.type(description="Fleet totals of one resource over a group of hypervisors.")
class FleetResource:
    name: str = strawberry.field(description="Resource key.")
    hypervisors: int = strawberry.field(description="Hosts in the group that have this resource.")
    physical: Quantity = strawberry.field(description="Sum of known physical capacity.")
    reserved: Quantity = strawberry.field(description="Sum of reservations.")
    capacity: Quantity = strawberry.field(description="Sum of known schedulable capacity.")
    booked: Quantity = strawberry.field(description="Sum of consumer bookings (all hosts).")
    free: Quantity = strawberry.field(
        description="Sum of known free capacity (negative free of over-subscribed hosts included)."
    )
    allocated: Quantity = strawberry.field(description="Sum of reported libvirt usage.")
    unknown_capacity_hosts: int = strawberry.field(
        description="Hosts whose physical capacity is unknown: left out of physical/capacity/free."
    )
    overcommitted_hosts: int = strawberry.field(description="Hosts with free < 0.")

    @strawberry.field(description="Booked / capacity over the hosts with known capacity.")
    def utilization(self, root: strawberry.Parent[fleet.FleetResource]) -> float | None:
        value = root.utilization
        return None if value is None else float(value)


@strawberry.type(description="Totals for one group (a zone, region, aggregate, building block).")
class FleetGroup:
    key: str | None = strawberry.field(
        description="The group's zone/region/aggregate/building block; null for hosts without one "
        "(and for the single group of NONE)."
    )

    @strawberry.field(description="Number of hypervisors in the group.")
    def hypervisor_count(self, root: strawberry.Parent[fleet.FleetGroup]) -> int:
        return len(root.hypervisors)

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
    snapshot: Snapshot, where: HypervisorFilter | None, group_by: FleetGrouping | None
) -> list[fleet.FleetGroup]:
    """Totals of the hosts ``where`` selects in ``snapshot``, grouped."""
    grouping = fleet.Grouping((group_by or FleetGrouping.NONE).value)
    return fleet.fleet_capacity(apply_filter(snapshot, where), grouping)
