"""The GraphQL view of the flavor catalog and of instance slots (``Query.slots``,
``Query.flavors``).

The numbers come from :mod:`gateway.domain.slots`; this module turns the arguments into a
request (explicit amounts, or a catalog flavor's as Nova builds it) and says clearly
what is wrong with them.
"""

import dataclasses
from collections.abc import Sequence
from decimal import Decimal
from typing import Annotated

import strawberry
from graphql import GraphQLError
from strawberry.types import Info

from gateway.api.context import Context
from gateway.api.drain import drained_fleet
from gateway.api.eligibility import catalog_flavor
from gateway.api.enums import CapacityBasis, CapacityView, ExclusionReason, FleetGrouping
from gateway.api.filters import (
    HypervisorFilter,
    ResourceRequest,
    apply_filter,
    compile_filter,
    fitting,
)
from gateway.api.nodes import Node, global_id
from gateway.api.objects import Hypervisor
from gateway.api.scalars import Count, KeyValue, ResourceAmount, amounts, pairs, recognizes
from gateway.api.warnings import warn_unknown_resources
from gateway.domain import flavors, records
from gateway.domain import slots as counted
from gateway.domain.demand import Demand
from gateway.domain.fleet import group_keys

__all__ = ["Asked", "Exclusion", "Flavor", "SlotGroup", "flavor_slots"]

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
DrainArg = Annotated[
    list[str] | None,
    strawberry.argument(
        description="Count as if these hosts were drained first: their consumers moved as "
        "Query.drainPlan plans it (in this view), the drained hosts left out."
    ),
]
ProjectArg = Annotated[
    str | None,
    strawberry.argument(
        description="The OpenStack project that would boot the instances: hosts whose "
        "spec.allowedProjects lists it are eligible. Without it, restricted hosts are not "
        "(PROJECT_RESTRICTED): they are not free for everyone."
    ),
]


@strawberry.type(description="The slots of one hypervisor.")
class HostSlots:
    hypervisor: Hypervisor = strawberry.field(description="The hypervisor.")
    slots: Count | None = strawberry.field(
        description="Instances that the scheduler could still place here: min over the "
        "requested resources of floor(figure / amount); 0 when the host is excluded (reason), "
        "a figure is negative or the request does not fit at all (min_unit, max_unit); null "
        "when a figure it needs is unknown."
    )

    basis: CapacityBasis | None = strawberry.field(
        description="The view the figures came from; null when unknown or excluded."
    )
    reason: ExclusionReason | None = strawberry.field(
        description="The first rule that excludes the host (Hypervisor.eligibility lists "
        "all); null when the scheduler could use it."
    )


@strawberry.type(description="Hosts of a group left out of the slots for one reason.")
class Exclusion:
    reason: ExclusionReason = strawberry.field(description="The first rule they fail.")
    hosts: int = strawberry.field(description="How many hosts (at least 1).")


@strawberry.type(
    description="How many more instances of one size the scheduler could place in a group of "
    "hypervisors (a zone, region, aggregate, building block, or all), counting only the "
    "hosts it would use. Every host of the group is in exactly one of: hostsWithRoom, "
    "eligible without room, hostsUnknown, excluded: hosts = hostsWithRoom + (eligible "
    "without room) + hostsUnknown + sum(excluded.hosts)."
)
class SlotGroup:
    key: str | None = strawberry.field(
        description="The group's zone/region/aggregate/building block; null for hosts without "
        "one (and for the single group of NONE)."
    )
    flavor: str | None = strawberry.field(
        description="The catalog flavor counted; null for an explicit request."
    )
    slots: Count | None = strawberry.field(
        description="Sum of the known per-host slots (0 on an excluded host, and on one where "
        "a known figure does not admit one instance); null when no host of the group could be "
        "judged or was excluded, and for a flavor that cannot be judged. On tracked hosts the "
        "room is counted as Placement counts it (memory in whole MiB, the allocation ratio in "
        "binary floating point): a host's slots can be one below floor(free / amount)."
    )
    allocation_slots: Count | None = strawberry.field(
        description="The part of slots judged on libvirt's allocation (in the AVAILABLE view "
        "the hosts whose bookings are not tracked, in ALLOCATION all): an estimate Placement "
        "does not share; null when no host was judged on it."
    )
    hosts_with_room: int = strawberry.field(description="Eligible hosts with at least one slot.")
    hosts_unknown: int = strawberry.field(
        description="Eligible hosts whose needed figures are unknown (or every eligible host, "
        "for a flavor that cannot be judged): left out of slots."
    )
    project: str | None = strawberry.field(description="The project asked for, if any.")

    view: CapacityView = strawberry.field(description="The view the slots were counted in.")

    @strawberry.field(description="What one instance requests, in base units.")
    def request(self, root: strawberry.Parent[counted.SlotGroup]) -> list[ResourceAmount]:
        return amounts(root.request)

    @strawberry.field(
        description="Hosts of the group the scheduler would not use, per first reason, in "
        "the order of the rules; reasons that exclude no host are left out."
    )
    def excluded(self, root: strawberry.Parent[counted.SlotGroup]) -> list[Exclusion]:
        return [Exclusion(reason=reason, hosts=hosts) for reason, hosts in root.excluded]

    @strawberry.field(description="Hosts in the group.")
    def hosts(self, root: strawberry.Parent[counted.SlotGroup]) -> int:
        return root.host_count

    @strawberry.field(description="Per-host slots, in name order.")
    def hypervisors(self, root: strawberry.Parent[counted.SlotGroup]) -> list[HostSlots]:
        return list(root.hosts)  # type: ignore[arg-type]


def _flavor_id(self: None, root: strawberry.Parent[flavors.Flavor]) -> strawberry.ID:
    """Its global id; ``self`` is unused (the shape a shortcut Lookup calls)."""
    return global_id("Flavor", root.name)


@strawberry.type(
    description="A flavor of the catalog (serve --flavors), and what Nova asks Placement for "
    "it: cpu = vcpus and memory = ram MiB in bytes; hw:cpu_policy=dedicated asks PCPU "
    "(pinned cores) instead of cpu, mixed the masked CPUs as PCPU; resources:CLASS=N "
    "requests CLASS (VCPU and MEMORY_MB replace vcpus and ram, N = 0 requests none); "
    "trait:NAME=required/forbidden and aggregate_instance_extra_specs:KEY=VALUE limit the "
    "hosts. disk is not requested unless resources:DISK_GB says so."
)
class Flavor(Node):
    is_type_of = recognizes(flavors.Flavor)
    name: str = strawberry.field(description="Flavor name.")
    id: strawberry.ID = strawberry.field(
        resolver=_flavor_id,
        description="Global id (Node): Flavor and the flavor name.",
    )

    vcpus: int = strawberry.field(description="vCPUs.")
    ram_mib: int = strawberry.field(description="RAM in MiB.")
    disk_gb: int | None = strawberry.field(description="Root disk in GB (not requested).")

    @strawberry.field(description="Extra specs (properties), as given.")
    def extra_specs(self, root: strawberry.Parent[flavors.Flavor]) -> list[KeyValue]:
        return pairs(root.extra_specs)

    @strawberry.field(
        description="What one instance of the flavor requests, in base units, as Nova "
        "translates it (PCPU where the CPUs are pinned)."
    )
    def resources(self, root: strawberry.Parent[flavors.Flavor]) -> list[ResourceAmount]:
        return amounts(root.resources)

    @strawberry.field(description="Traits a host must have (trait:NAME=required), sorted.")
    def required_traits(self, root: strawberry.Parent[flavors.Flavor]) -> list[str]:
        return sorted(root.demand.required)

    @strawberry.field(description="Traits a host must not have (trait:NAME=forbidden), sorted.")
    def forbidden_traits(self, root: strawberry.Parent[flavors.Flavor]) -> list[str]:
        return sorted(root.demand.forbidden)

    @strawberry.field(
        description="aggregate_instance_extra_specs: metadata a host's aggregates must match "
        "(value: plain text, or an operator such as <in>, <or>, s==, >=)."
    )
    def aggregate_specs(self, root: strawberry.Parent[flavors.Flavor]) -> list[KeyValue]:
        return pairs(dict(root.demand.aggregate_specs))

    @strawberry.field(
        description="Whether its slots can be judged host by host; false for a flavor with "
        "granular request groups (resourcesN:, traitN:), which several providers may satisfy "
        "together: its slots are then null and every eligible host unknown."
    )
    def judged(self, root: strawberry.Parent[flavors.Flavor]) -> bool:
        return root.demand.unjudged is None

    @strawberry.field(description="Why the flavor cannot be judged; null when it can.")
    def reason(self, root: strawberry.Parent[flavors.Flavor]) -> str | None:
        return root.demand.unjudged

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
        project: ProjectArg = None,
        drain: DrainArg = None,
    ) -> list[SlotGroup]:
        asked = Asked(filter, group_by, view, project, drain)
        return _groups(info, root.demand, root.name, asked)  # type: ignore[return-value]


@dataclasses.dataclass(frozen=True, slots=True)
class Asked:
    """Which hosts a slots question counts, and how: its arguments beside the request."""

    where: HypervisorFilter | None
    grouping: FleetGrouping
    view: CapacityView
    project: str | None
    #: Hosts drained first (Query.drainPlan's moves applied), if any.
    drain: Sequence[str] | None


def flavor_slots(
    info: Info[Context, None],
    request: Sequence[ResourceRequest] | None,
    flavor: str | None,
    asked: Asked,
) -> list[counted.SlotGroup]:
    """``Query.slots``: exactly one of an explicit request and a catalog flavor."""
    if (request is None) == (flavor is None):
        raise GraphQLError("slots needs exactly one of request and flavor", extensions=_BAD)
    if flavor is not None:
        found = catalog_flavor(info.context.catalog, flavor)
        return _groups(info, found.demand, found.name, asked)
    total: dict[str, Decimal] = {}
    warn_unknown_resources(info.context, [r.resource for r in request or ()])
    for r in request or ():
        if r.resource in total:
            raise GraphQLError(f"slots request names {r.resource} twice", extensions=_BAD)
        total[r.resource] = r.amount
    return _groups(info, Demand.of_amounts(total), None, asked)


_BAD = {"code": "BAD_SLOTS_REQUEST"}


def _groups(
    info: Info[Context, None], demand: Demand, flavor: str | None, asked: Asked
) -> list[counted.SlotGroup]:
    context = info.context
    where, grouping, view = asked.where, asked.grouping, asked.view
    warn_unknown_resources(context, fitting(where))
    snapshot, catalog = context.snapshot, context.catalog
    kept = where is None and asked.project is None and asked.drain is None
    if kept and flavor is not None and catalog.get(flavor):
        # The whole fleet's slots of every catalog flavor are kept per change.
        requests = [(f.name, f.demand) for f in catalog.flavors]
        tally = counted.SlotTally.of(requests, view, grouping)
        keys = group_keys(grouping)
        return counted.read_groups(
            context.ledger(tally),
            flavor,
            lambda key: [h for h in snapshot.ordered if key in keys(h)],
        )
    if asked.drain is not None:
        left = compile_filter(where, catalog)
        after = drained_fleet(info, asked.drain, view)
        hosts: Sequence[records.Hypervisor] = [h for h in after if left(h)]
    else:
        hosts = apply_filter(context.views, snapshot, where, catalog, context.budget)
    if context.budget is not None:
        context.budget.scan()
    try:
        return counted.slot_groups(hosts, demand, grouping, view, flavor, asked.project)
    except ValueError as error:
        raise GraphQLError(f"slots: {error}", extensions=_BAD) from error
