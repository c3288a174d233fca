"""Filtering and ordering hypervisors: the inputs of ``Query.hypervisors`` and friends."""

import dataclasses
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from decimal import Decimal
from enum import Enum
from typing import Any

import strawberry

from gateway.api.arguments import UUID, LabelSelector, ResourceName
from gateway.api.budget import Budget
from gateway.api.eligibility import catalog_flavor
from gateway.api.enums import CapacityView
from gateway.api.inputs import built_once
from gateway.api.pagination import Position
from gateway.api.scalars import Quantity
from gateway.domain import capacity, slots
from gateway.domain import records as domain
from gateway.domain.flavors import NO_CATALOG, Catalog
from gateway.store.ordered import Mapped
from gateway.store.snapshot import Snapshot
from gateway.store.views import Views

__all__ = [
    "HypervisorFilter",
    "HypervisorOrder",
    "apply_filter",
    "compile_filter",
    "ordered",
]

Predicate = Callable[[domain.Hypervisor], bool]
#: What an ordering by a figure sorts by when it names no resource.
ORDER_RESOURCE = "memory"


@built_once
@strawberry.input(description="An amount of one resource a workload asks for.")
class ResourceRequest:
    resource: ResourceName = strawberry.field(description="Resource key: cpu, memory, DISK_GB, ...")
    amount: Quantity = strawberry.field(
        description='Amount in base units (cores, bytes), e.g. "4" or "16Gi"; never negative. '
        "An amount below Placement's min_unit (1 core, 1 MiB, 1 unit), 0 for one, fits nowhere."
    )


@built_once
@strawberry.input(description="Conditions a hypervisor must meet; all given ones must hold.")
class HypervisorFilter:
    names: list[str] | None = strawberry.field(default=None, description="Any of these names.")
    zone: str | None = strawberry.field(default=None, description="Availability zone label.")
    region: str | None = strawberry.field(default=None, description="Region label.")
    building_block: str | None = strawberry.field(default=None, description="Building block.")
    aggregate: str | None = strawberry.field(
        default=None, description="Member of this aggregate (name or UUID, any source)."
    )
    trait: str | None = strawberry.field(default=None, description="Has this trait (any source).")
    label_selector: LabelSelector | None = strawberry.field(
        default=None, description='Kubernetes label selector, e.g. "a=b,c in (d,e),!f".'
    )
    ready: bool | None = strawberry.field(default=None, description="Ready condition is True.")
    maintenance: list[str] | None = strawberry.field(
        default=None,
        description='spec.maintenance is one of these; "" matches hosts not in maintenance.',
    )
    consumer: UUID | None = strawberry.field(
        default=None, description="This consumer UUID is booked on it."
    )
    project_id: str | None = strawberry.field(
        default=None, description="A consumer of this project is booked on it."
    )
    view: CapacityView = strawberry.field(
        default=CapacityView.AVAILABLE,
        description="The figure canFit and overcommitted judge: AVAILABLE (each host on its own "
        "basis), BOOKINGS (free) or ALLOCATION (unallocated).",
    )
    can_fit: list[ResourceRequest] | None = strawberry.field(
        default=None,
        description=(
            "The view's figure admits this request under Placement rules: for every resource, "
            "min_unit <= amount <= max_unit and amount <= the figure, where min_unit is 1 core, "
            "1 MiB or 1 unit and max_unit the physical total. Unknown never fits; in the "
            "BOOKINGS view a host whose bookings are not tracked never does."
        ),
    )
    overcommitted: bool | None = strawberry.field(
        default=None,
        description="Some resource's figure in the view is negative (true), or every known "
        "capacity has a non-negative figure (false); hosts whose figures are unknown match "
        "neither.",
    )
    fits_flavor: str | None = strawberry.field(
        default=None,
        description="The scheduler could place at least one more instance of this catalog "
        "flavor here: the host is eligible for it (Hypervisor.eligibility, with project) and "
        "has a slot in the view. Unknown flavors fail (UNKNOWN_FLAVOR).",
    )
    project: str | None = strawberry.field(
        default=None,
        description="Open to this OpenStack project: spec.allowedProjects is empty or lists it. "
        "With fitsFlavor, the project the instances would be booted for. (projectId instead "
        "selects hosts where the project has bookings.)",
    )
    bookings_tracked: bool | None = strawberry.field(
        default=None, description="spec.bookings is present."
    )
    has_status: bool | None = strawberry.field(
        default=None, description="The node agent has reported a status."
    )
    evicted: bool | None = strawberry.field(
        default=None,
        description="status.evicted is true; false matches every host not reported evicted.",
    )
    tainted: bool | None = strawberry.field(
        default=None,
        description="The Tainted condition is True; false matches every host not tainted.",
    )


@strawberry.enum(description="What to order hypervisors by.")
class HypervisorOrderField(Enum):
    NAME = strawberry.enum_value("NAME", description="Hypervisor name.")
    AVAILABLE = strawberry.enum_value(
        "AVAILABLE", description="Best known free figure of the resource (available)."
    )
    FREE = strawberry.enum_value("FREE", description="Free capacity of the resource (bookings).")
    BOOKED = strawberry.enum_value("BOOKED", description="Booked amount of the resource.")
    CAPACITY = strawberry.enum_value("CAPACITY", description="Capacity of the resource.")
    UTILIZATION = strawberry.enum_value(
        "UTILIZATION", description="used / capacity of the resource (best known figure)."
    )


@strawberry.enum(description="Sort direction.")
class OrderDirection(Enum):
    ASC = strawberry.enum_value("ASC", description="Smallest first.")
    DESC = strawberry.enum_value("DESC", description="Largest first.")


@built_once
@strawberry.input(
    description="Ordering; ties by name. Unknown (null) values come last in both directions."
)
class HypervisorOrder:
    field: HypervisorOrderField = strawberry.field(
        default=HypervisorOrderField.NAME, description="Sort key."
    )
    resource: ResourceName | None = strawberry.field(
        default=ResourceName(ORDER_RESOURCE),
        description="Resource for AVAILABLE, FREE, BOOKED, CAPACITY, UTILIZATION (e.g. cpu); "
        "omitted or null: memory, the resource Nova's scheduler spreads hosts by (its RAM "
        "weigher).",
    )
    direction: OrderDirection = strawberry.field(
        default=OrderDirection.ASC, description="ASC or DESC."
    )


def apply_filter(
    views: Views,
    snapshot: Snapshot,
    where: HypervisorFilter | None,
    catalog: Catalog = NO_CATALOG,
    budget: Budget | None = None,
) -> Sequence[domain.Hypervisor]:
    """The hypervisors of ``snapshot`` that match, in name order; ``catalog`` holds the
    flavors the filter may name, ``views`` the store's carried selections.

    Starts from the narrowest index the filter allows, then checks the rest: a pass
    over the fleet, unless the selection is kept, which ``budget`` (an operation's)
    is told first.
    """
    if where is None:
        return snapshot.ordered
    predicate = compile_filter(where, catalog)
    key = _key(where)
    if budget is not None and not views.selects(snapshot, key):
        budget.scan()
    return views.selection(snapshot, key, predicate, _candidates(views, snapshot, where))


def _candidates(
    views: Views, snapshot: Snapshot, where: HypervisorFilter
) -> Iterator[domain.Hypervisor]:
    """The narrowest index the filter allows: every host it could select, in name order.

    Looked up only when a selection is made: a kept one needs none, and the indexes
    of a zone, a trait or a consumer are passes over a new snapshot's fleet.
    """
    if where.consumer is not None:
        hosts = views.consumers(snapshot).hosts(where.consumer.lower())
        yield from (snapshot.by_name[name] for name in hosts)
    elif where.zone is not None:
        yield from snapshot.by_zone.get(where.zone, ())
    elif where.trait is not None:
        yield from snapshot.by_trait.get(where.trait, ())
    else:
        yield from snapshot.ordered


#: Per type of a filter's values, its fields if it is an input type (None for a
#: scalar, an enum): the schema's few types.
_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _key(value: Any) -> Hashable:
    """A filter as a hashable value: equal for filters that select the same hosts.

    Made at every request of a filter: 15 us for a canFit one asking
    dataclasses.fields at each level, 4 with what each type is kept."""
    if isinstance(value, list | tuple):
        return tuple(map(_key, value))
    if isinstance(value, LabelSelector):
        return ("labelSelector", value.text)
    kind = type(value)
    try:
        names = _FIELDS[kind]
    except KeyError:
        names = _FIELDS.setdefault(kind, _fields(value))
    if names is None:
        hash(value)  # a scalar: a string, a number, an enum member
        return value  # type: ignore[no-any-return]
    given = [(name, getattr(value, name)) for name in names]  # the fields not null, only
    return (kind.__name__, *[(name, _key(v)) for name, v in given if v is not None])


def _fields(value: Any) -> tuple[str, ...] | None:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return tuple(f.name for f in dataclasses.fields(value))
    return None


def compile_filter(where: HypervisorFilter | None, catalog: Catalog = NO_CATALOG) -> Predicate:
    """A predicate for one hypervisor; raises GraphQLError for a malformed filter."""
    if where is None:
        return lambda h: True
    predicates = list(_predicates(where, catalog))
    return lambda h: all(p(h) for p in predicates)


def _predicates(where: HypervisorFilter, catalog: Catalog) -> Iterable[Predicate]:
    if where.names is not None:
        names = set(where.names)
        yield lambda h: h.name in names
    for attribute in ("zone", "region", "building_block"):
        if (value := getattr(where, attribute)) is not None:
            yield lambda h, a=attribute, v=value: getattr(h, a) == v  # type: ignore[misc]
    if (aggregate := where.aggregate) is not None:
        yield lambda h: any(aggregate in (a.name, a.uuid) for a in h.aggregates)
    if (trait := where.trait) is not None:
        yield lambda h: any(t.name == trait for t in h.traits)
    if (selector := where.label_selector) is not None:
        yield lambda h: selector.matches(h.labels)
    if where.maintenance is not None:
        modes = {m or None for m in where.maintenance}
        yield lambda h: h.maintenance in modes
    if (consumer := where.consumer) is not None:
        yield lambda h: domain.has_consumer(h, consumer)
    if (project := where.project_id) is not None:
        yield lambda h: any(c.project_id == project for c in h.consumers)
    view = where.view
    if where.can_fit is not None:
        yield capacity.fitting(_request(where.can_fit), view)
    if (overcommitted := where.overcommitted) is not None:
        yield lambda h: h.overcommitted_in(view) is overcommitted
    if where.fits_flavor is not None:
        demand, asking = catalog_flavor(catalog, where.fits_flavor).demand, where.project
        yield lambda h: bool(slots.host_slots(h, demand, view, asking).slots)
    elif (asking := where.project) is not None:
        yield lambda h: not h.allowed_projects or asking in h.allowed_projects
    for flag in ("ready", "bookings_tracked", "has_status"):
        if (wanted := getattr(where, flag)) is not None:
            yield lambda h, f=flag, w=wanted: getattr(h, f) is w  # type: ignore[misc]
    # Unknown counts as "not": an agent that omits false (omitempty) means false.
    for flag in ("evicted", "tainted"):
        if (wanted := getattr(where, flag)) is not None:
            yield lambda h, f=flag, w=wanted: (getattr(h, f) is True) is w  # type: ignore[misc]


def fitting(where: HypervisorFilter | None) -> list[str]:
    """The resources ``where`` asks a host to fit (canFit), for warnings."""
    return [r.resource for r in (where.can_fit or ())] if where is not None else []


def _request(requests: Sequence[ResourceRequest]) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    for r in requests:
        total[r.resource] = total.get(r.resource, Decimal(0)) + r.amount
    return total


# Ordering. Keys sort ascending in the wanted order, so pagination can bisect them:
# (unknown last, value, name), with values negated for DESC.

Key = tuple[int, Decimal, Any]
_ZERO = Decimal(0)


def ordered(
    hypervisors: Sequence[domain.Hypervisor], order: HypervisorOrder | None
) -> tuple[Sequence[domain.Hypervisor], Sequence[Key]]:
    """``hypervisors`` (in name order) sorted by ``order``, with their keys.

    By name, ascending (the default), they are in order already, and their keys
    are made only where a page reads them: a page of a large fleet costs the page.
    """
    order = order or HypervisorOrder()
    if order.field is HypervisorOrderField.NAME and order.direction is OrderDirection.ASC:
        return hypervisors, Mapped(hypervisors, _name_key)
    keys = _keys(hypervisors, order)
    ranked = sorted(zip(keys, hypervisors, strict=True), key=lambda pair: pair[0])
    return [h for _, h in ranked], [k for k, _ in ranked]


def _name_key(hypervisor: domain.Hypervisor) -> Key:
    return (0, _ZERO, hypervisor.name)


def _keys(hypervisors: Sequence[domain.Hypervisor], order: HypervisorOrder) -> list[Key]:
    descending = order.direction is OrderDirection.DESC
    if order.field is HypervisorOrderField.NAME:
        return [(0, _ZERO, _descending_name(h.name)) for h in hypervisors]
    value = _VALUES[order.field]
    named = order.resource or ORDER_RESOURCE
    keys = []
    for h in hypervisors:
        resource = h.resources.get(named)
        v = value(resource) if resource is not None else None
        keys.append((1, Decimal(0), h.name) if v is None else (0, -v if descending else v, h.name))
    return keys


def _descending_name(name: str) -> tuple[int, ...]:
    """A key that sorts names in reverse: negated code points, then a sentinel larger
    than any of them, so that a prefix sorts after the longer name."""
    return (*(-ord(c) for c in name), 1)


_VALUES: dict[HypervisorOrderField, Callable[[domain.ResourceCapacity], Decimal | None]] = {
    HypervisorOrderField.AVAILABLE: lambda r: r.available,
    HypervisorOrderField.FREE: lambda r: r.free,
    HypervisorOrderField.BOOKED: lambda r: r.booked,
    HypervisorOrderField.CAPACITY: lambda r: r.capacity,
    HypervisorOrderField.UTILIZATION: lambda r: r.utilization,
}


def position(key: Key) -> Position:
    """The position a cursor carries for ``key``: the name as it is, also for NAME DESC."""
    flag, value, name = key
    if isinstance(name, tuple):
        name = "".join(chr(-c) for c in name[:-1])
    return Position(flag, value, name)


def position_key(order: HypervisorOrder | None) -> Callable[[Position], Key]:
    """The key of ``order`` at a cursor's position: any position is one (domain of keys)."""
    order = order or HypervisorOrder()
    if order.field is HypervisorOrderField.NAME and order.direction is OrderDirection.DESC:
        return lambda p: (p.rank, p.value, _descending_name(p.name))
    return lambda p: p
