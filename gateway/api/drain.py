"""``Query.drainPlan``: where the instances of hosts to be emptied would go, and the
fleet as the drain would leave it (the plan is :mod:`gateway.domain.drain`'s).

A drain reads the whole fleet: the first pass moves the operation off the event
loop (its budget's ``scan``), and the planner looks at the budget as it goes, so a
drain of a whole region ends at the request's time limit, not after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import strawberry
from graphql import GraphQLError
from strawberry.types import Info

from gateway.api.arguments import UUID
from gateway.api.codes import Code
from gateway.api.context import Context
from gateway.api.enums import CapacityView, FleetGrouping
from gateway.api.filters import HypervisorFilter, apply_filter
from gateway.api.scalars import Quantity, ResourceAmount, amounts
from gateway.api.totals import FleetGroup
from gateway.domain import drain, fleet
from gateway.domain.records import Hypervisor

__all__ = ["DrainPlan", "drain_plan", "drained_fleet"]


@strawberry.type(description="One consumer's booking moved off a drained host.")
class DrainMove:
    uuid: UUID = strawberry.field(description="The consumer (instance) UUID.")
    from_: str = strawberry.field(name="from", description="The drained host it leaves.")
    to: str = strawberry.field(description="The host it would go to.")
    resources: list[ResourceAmount] = strawberry.field(
        description="What its booking on the drained host claims, in base units."
    )


@strawberry.type(description="A consumer of a drained host that no eligible host can take.")
class UnplacedConsumer:
    uuid: UUID = strawberry.field(description="The consumer (instance) UUID.")
    from_: str = strawberry.field(name="from", description="The drained host it is on.")
    resources: list[ResourceAmount] = strawberry.field(
        description="What its booking claims, in base units."
    )
    reason: str = strawberry.field(
        description="Why: no host of its zone the scheduler would use for it, none of those "
        "that knows the figures its booking needs, or none of those with room left for it."
    )


@strawberry.type(description="Room left for one resource.")
class DrainRoom:
    name: str = strawberry.field(description="Resource key.")
    amount: Quantity | None = strawberry.field(description="In base units; null when unknown.")


@strawberry.type(
    description="A drained host whose bookings are not tracked: its instances' sizes and "
    "projects are unknown, so its allocation is judged in aggregate against what its zone's "
    "eligible hosts (ready, enabled, open to every project, of its isolation) have left "
    "unallocated after the exact moves (libvirt's view, as its allocation is, in any view)."
)
class DrainEstimate:
    zone: str | None = strawberry.field(description="Its zone.")
    fits: bool = strawberry.field(
        description="Every resource of its allocation is within what the zone has left; "
        "whether the instances fit one by one is not known."
    )

    @strawberry.field(description="The drained host.")
    def hypervisor(self, root: strawberry.Parent[drain.Estimate]) -> str:
        return root.host

    @strawberry.field(description="What libvirt reports it runs (status.allocation).")
    def allocation(self, root: strawberry.Parent[drain.Estimate]) -> list[ResourceAmount]:
        return amounts(root.allocation)

    @strawberry.field(
        description="Per resource of its allocation, what the zone's eligible hosts have "
        "left unallocated (null where none of them knows it)."
    )
    def left(self, root: strawberry.Parent[drain.Estimate]) -> list[DrainRoom]:
        return [
            DrainRoom(name=name, amount=None if room is None else Quantity(room))
            for name, room in sorted(root.left.items())
        ]


@strawberry.type(
    description="What draining hosts would do: every consumer of a drained host placed, in a "
    "fixed order (largest memory first, then cpu, then UUID), on the host of its zone the "
    "scheduler would use for it (ready, enabled, open to its project, of the same isolation "
    "as the host it leaves) that is left with the least memory after it, ties by name; or "
    "left unplaced, with why. Read-only: nothing is moved."
)
class DrainPlan:
    drained: list[str] = strawberry.field(description="The hosts drained, by name.")
    view: CapacityView = strawberry.field(description="The view room was judged in.")
    exact: bool = strawberry.field(
        description="Every drained host's instances were placed one by one: false when "
        "estimatedHosts is not empty, and the plan is then only as good as the estimate."
    )

    @strawberry.field(
        description="Drained hosts judged in aggregate (bookings not tracked: the sizes of "
        "their instances are unknown)."
    )
    def estimated_hosts(self, root: strawberry.Parent[drain.DrainPlan]) -> list[str]:
        return [e.host for e in root.estimates]

    @strawberry.field(description="The consumers moved, in the order they were placed.")
    def moves(self, root: strawberry.Parent[drain.DrainPlan]) -> list[DrainMove]:
        return [
            DrainMove(
                uuid=UUID(m.uuid), from_=m.source, to=m.target, resources=amounts(m.resources)
            )
            for m in root.moves
        ]

    @strawberry.field(description="The consumers no eligible host of their zone can take.")
    def unplaced(self, root: strawberry.Parent[drain.DrainPlan]) -> list[UnplacedConsumer]:
        return [
            UnplacedConsumer(
                uuid=UUID(u.uuid), from_=u.source, resources=amounts(u.resources), reason=u.reason
            )
            for u in root.unplaced
        ]

    @strawberry.field(description="The drained hosts judged in aggregate, one by one.")
    def estimates(self, root: strawberry.Parent[drain.DrainPlan]) -> list[DrainEstimate]:
        return list(root.estimates)  # type: ignore[arg-type]

    @strawberry.field(
        description="Capacity totals with the moves applied (booked and allocated grown on "
        "the hosts that take them) and the drained hosts left out. An estimated host's "
        "instances are placed on no host here: their allocation is in no total (exact is "
        "false; see estimates)."
    )
    def after(
        self,
        root: strawberry.Parent[drain.DrainPlan],
        info: Info[Context, None],
        group_by: Annotated[
            FleetGrouping, strawberry.argument(description="Grouping (default ZONE).")
        ] = FleetGrouping.ZONE,
    ) -> list[FleetGroup]:
        fleet_after = drain.after_drain(info.context.snapshot.ordered, root)
        return fleet.fleet_capacity(fleet_after, group_by)  # type: ignore[return-value]


def drain_plan(
    info: Info[Context, None],
    hosts: Sequence[str] | None,
    where: HypervisorFilter | None,
    view: CapacityView,
) -> drain.DrainPlan:
    """The plan for the hosts named and those the filter selects (one of them given)."""
    if hosts is None and where is None:
        raise GraphQLError(
            "drainPlan needs hosts, a filter, or both", extensions={"code": Code.BAD_DRAIN.value}
        )
    context = info.context
    names = _drained(context, hosts, where)
    if context.budget is not None:
        context.budget.scan()
    check = context.budget.check if context.budget is not None else _unbounded
    return drain.plan_drain(context.snapshot.ordered, names, view, check)


def drained_fleet(
    info: Info[Context, None], hosts: Sequence[str], view: CapacityView
) -> list[Hypervisor]:
    """The fleet as draining ``hosts`` would leave it (``slots(drain:)``): made once per
    operation, for every flavor's slots that ask for the same drain."""
    key = ("drained fleet", tuple(sorted(set(hosts))), view)
    memo = info.context.memo
    if key not in memo:
        plan = drain_plan(info, hosts, None, view)
        memo[key] = drain.after_drain(info.context.snapshot.ordered, plan)
    found: list[Hypervisor] = memo[key]
    return found


def _drained(
    context: Context, hosts: Sequence[str] | None, where: HypervisorFilter | None
) -> list[str]:
    snapshot = context.snapshot
    unknown = sorted(set(hosts or ()) - snapshot.by_name.keys())
    if unknown:
        raise GraphQLError(
            f"no hypervisor named {', '.join(unknown)}",
            extensions={"code": Code.UNKNOWN_HYPERVISOR.value},
        )
    selected = (
        apply_filter(context.views, snapshot, where, context.catalog, context.budget)
        if where
        else ()
    )
    return sorted({*(hosts or ()), *(h.name for h in selected)})


def _unbounded() -> None:
    """No budget to look at (a subscription's event)."""
