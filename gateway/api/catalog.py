"""The GraphQL view of the flavor catalog and of instance slots (``Query.slots``,
``Query.flavors``).

The numbers come from :mod:`gateway.domain.slots`; this module turns the arguments into a
request (explicit amounts, or a catalog flavor's) and says clearly what is wrong
with them.
"""

from collections.abc import Sequence
from decimal import Decimal
from typing import Annotated

import strawberry
from graphql import GraphQLError
from strawberry.types import Info

from gateway.api.context import Context
from gateway.api.enums import CapacityBasis, CapacityView, FleetGrouping
from gateway.api.filters import HypervisorFilter, ResourceRequest, apply_filter
from gateway.api.objects import Hypervisor
from gateway.api.scalars import KeyValue, ResourceAmount, amounts, pairs
from gateway.domain import flavors
from gateway.domain import slots as counted
from gateway.domain.fleet import group_keys
from gateway.domain.records import Amounts

__all__ = ["Flavor", "SlotGroup", "flavor_slots"]

GroupByArg = Annotated[
    FleetGrouping, strawberry.argument(description="Grouping (default NONE: one group).")
]
ViewArg = Annotated[
    CapacityView,
    strawberry.argument(
        description="The figure slots divide: AVAILABLE (each host on its own basis), BOOKINGS "
        "(free; untracked hosts are unknown) or ALLOCATION (unallocated)."
    ),
]
SlotFilterArg = Annotated[
    HypervisorFilter | None,
    strawberry.argument(
        description="Hosts to count (default: all). Its view only applies to its own canFit "
        "and overcommitted conditions."
    ),
]


@strawberry.type(description="The slots of one hypervisor.")
class HostSlots:
    hypervisor: Hypervisor = strawberry.field(description="The hypervisor.")
    slots: int | None = strawberry.field(
        description="Instances of the size that still fit: min over the requested resources of "
        "floor(figure / amount); 0 when a figure is negative or the request does not fit at "
        "all (min_unit, max_unit); null when a figure it needs is unknown."
    )

    basis: CapacityBasis | None = strawberry.field(
        description="The view the figures came from; null when unknown."
    )


@strawberry.type(
    description="How many more instances of one size fit in a group of hypervisors (a zone, "
    "region, aggregate, building block, or all): the question Placement cannot answer."
)
class SlotGroup:
    key: str | None = strawberry.field(
        description="The group's zone/region/aggregate/building block; null for hosts without "
        "one (and for the single group of NONE)."
    )
    flavor: str | None = strawberry.field(
        description="The catalog flavor counted; null for an explicit request."
    )
    slots: int | None = strawberry.field(
        description="Sum of the known per-host slots; null when no host could be judged."
    )
    allocation_slots: int | None = strawberry.field(
        description="The part of slots judged on libvirt's allocation (in the AVAILABLE view "
        "the hosts whose bookings are not tracked, in ALLOCATION all): an estimate Placement "
        "does not share; null when no host was judged on it."
    )
    hosts_with_room: int = strawberry.field(description="Hosts with at least one slot.")
    hosts_unknown: int = strawberry.field(
        description="Hosts whose needed figures are unknown: left out of slots."
    )

    view: CapacityView = strawberry.field(description="The view the slots were counted in.")

    @strawberry.field(description="What one instance requests, in base units.")
    def request(self, root: strawberry.Parent[counted.SlotGroup]) -> list[ResourceAmount]:
        return amounts(root.request)

    @strawberry.field(description="Hosts in the group.")
    def hosts(self, root: strawberry.Parent[counted.SlotGroup]) -> int:
        return root.host_count

    @strawberry.field(description="Per-host slots, in name order.")
    def hypervisors(self, root: strawberry.Parent[counted.SlotGroup]) -> list[HostSlots]:
        return list(root.hosts)  # type: ignore[arg-type]


@strawberry.type(
    description="A flavor of the catalog (serve --flavors). It requests cpu = vcpus and memory "
    "= ram MiB in bytes; extra specs resources:CLASS=N request CLASS (resources:VCPU and "
    "resources:MEMORY_MB replace vcpus and ram, N = 0 requests none); disk is not requested "
    "unless resources:DISK_GB says so."
)
class Flavor:
    name: str = strawberry.field(description="Flavor name.")
    vcpus: int = strawberry.field(description="vCPUs.")
    ram_mib: int = strawberry.field(description="RAM in MiB.")
    disk_gb: int | None = strawberry.field(description="Root disk in GB (not requested).")

    @strawberry.field(description="Extra specs (properties), as given.")
    def extra_specs(self, root: strawberry.Parent[flavors.Flavor]) -> list[KeyValue]:
        return pairs(root.extra_specs)

    @strawberry.field(description="What one instance of the flavor requests, in base units.")
    def resources(self, root: strawberry.Parent[flavors.Flavor]) -> list[ResourceAmount]:
        return amounts(root.resources)

    @strawberry.field(
        description="Slots of this flavor per group: with Query.flavors, what still fits per "
        "flavor and group in one query."
    )
    def slots(
        self,
        root: strawberry.Parent[flavors.Flavor],
        info: Info[Context, None],
        filter: SlotFilterArg = None,
        group_by: GroupByArg = FleetGrouping.NONE,
        view: ViewArg = CapacityView.AVAILABLE,
    ) -> list[SlotGroup]:
        return _groups(info, root.resources, filter, group_by, view, root.name)  # type: ignore[return-value]


def flavor_slots(
    info: Info[Context, None],
    request: Sequence[ResourceRequest] | None,
    flavor: str | None,
    where: HypervisorFilter | None,
    group_by: FleetGrouping,
    view: CapacityView,
) -> list[counted.SlotGroup]:
    """``Query.slots``: exactly one of an explicit request and a catalog flavor."""
    if (request is None) == (flavor is None):
        raise GraphQLError("slots needs exactly one of request and flavor", extensions=_BAD)
    if flavor is not None:
        found = info.context.catalog.get(flavor)
        if found is None:
            raise GraphQLError(_unknown(info.context.catalog, flavor), extensions=_UNKNOWN)
        return _groups(info, found.resources, where, group_by, view, found.name)
    total: dict[str, Decimal] = {}
    for r in request or ():
        if r.resource in total:
            raise GraphQLError(f"slots request names {r.resource} twice", extensions=_BAD)
        total[r.resource] = r.amount
    return _groups(info, total, where, group_by, view, None)


_UNKNOWN = {"code": "UNKNOWN_FLAVOR"}
_BAD = {"code": "BAD_SLOTS_REQUEST"}


def _unknown(catalog: flavors.Catalog, name: str) -> str:
    if not catalog.flavors:
        return f"unknown flavor {name!r}: no flavor catalog is loaded (serve --flavors FILE)"
    return f"unknown flavor {name!r}: Query.flavors lists the {len(catalog.flavors)} known ones"


def _groups(
    info: Info[Context, None],
    request: Amounts,
    where: HypervisorFilter | None,
    grouping: FleetGrouping,
    view: CapacityView,
    flavor: str | None,
) -> list[counted.SlotGroup]:
    snapshot, catalog = info.context.snapshot, info.context.catalog
    if where is None and flavor is not None and catalog.get(flavor) is not None:
        # The whole fleet's slots of every catalog flavor are kept per change.
        requests = [(f.name, f.resources) for f in catalog.flavors]
        tally = counted.SlotTally.of(requests, view, grouping)
        keys = group_keys(grouping)
        return counted.read_groups(
            info.context.ledger(tally),
            flavor,
            lambda key: [h for h in snapshot.ordered if key in keys(h)],
        )
    hosts = apply_filter(snapshot, where)
    try:
        return counted.slot_groups(hosts, request, grouping, view, flavor)
    except ValueError as error:
        raise GraphQLError(f"slots: {error}", extensions=_BAD) from error
