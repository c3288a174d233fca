"""Free capacity in two views, and the best known figure (domain brief, sections 4 and 6).

For each resource ``r`` of a hypervisor::

    capacity[r]    = floor((physical[r] - reserved[r]) * ratio[r])   bookings tracked
                   = floor(physical[r] * ratio[r])                   not tracked
    free[r]        = capacity[r] - booked[r]       Placement's view, tracked hosts only
    unallocated[r] = capacity[r] - allocated[r]    libvirt's view
    available[r]   = free[r] if tracked, else unallocated[r]

The overcommit ratio applies after the reservation is removed, figures are floored
in base units (cores, bytes), and anything that depends on an unknown figure is
unknown (``None``), never zero: above all the bookings of a host without
``spec.bookings``, which are not "none" but not known.
"""

from __future__ import annotations

import dataclasses
import decimal
from collections.abc import Callable, Mapping
from decimal import Decimal

from gateway.domain.quantity import CONTEXT
from gateway.domain.records import Amounts, Basis, Hypervisor, ResourceCapacity, View, figure_of

__all__ = [
    "PlacementInventory",
    "admits",
    "compute_resources",
    "fits",
    "fitting",
    "judged",
    "placement_bounds",
    "placement_inventories",
    "placement_usages",
    "resource",
    "resource_class",
]

ONE = Decimal(1)
ZERO = Decimal(0)
MEBIBYTE = Decimal(2**20)
_MIB = 2**20


def compute_resources(
    *,
    tracked: bool,
    physical: Amounts,
    overcommit: Amounts,
    reserved: Amounts,
    booked: Amounts,
    allocated: Amounts,
    effective: Amounts,
) -> dict[str, ResourceCapacity]:
    """One :class:`ResourceCapacity` per resource seen in capacity, bookings or allocation.

    ``tracked``: whether ``spec.bookings`` is present; without it ``reserved`` and
    ``booked`` are not known (and empty).
    """
    names = sorted({*physical, *reserved, *booked, *allocated})
    return {
        name: resource(
            name,
            physical.get(name),
            overcommit.get(name, ONE),
            reserved.get(name, ZERO) if tracked else None,
            booked.get(name, ZERO) if tracked else None,
            allocated.get(name),
            effective.get(name),
        )
        for name in names
    }


def resource(
    name: str,
    physical: Decimal | None,
    ratio: Decimal,
    reserved: Decimal | None,
    booked: Decimal | None,
    allocated: Decimal | None,
    effective: Decimal | None,
) -> ResourceCapacity:
    """One resource's figures from what the host says of it (``reserved`` and ``booked``
    None where its bookings are not tracked): the record's, and a drain plan's target
    once an instance came."""
    capacity = free = unallocated = None
    if physical is not None:
        capacity = _floor_capacity(physical, reserved or ZERO, ratio)
        if booked is not None:
            free = CONTEXT.subtract(capacity, booked)
        if allocated is not None:
            unallocated = CONTEXT.subtract(capacity, allocated)
    tracked = booked is not None
    available = free if tracked else unallocated
    placement_free, placement_max = placement_bounds(name, physical, ratio, reserved, booked)
    return ResourceCapacity(
        name=name,
        physical=physical,
        overcommit_ratio=ratio,
        reserved=reserved,
        capacity=capacity,
        booked=booked,
        free=free,
        allocated=allocated,
        unallocated=unallocated,
        effective_capacity=effective,
        available=available,
        basis=None if available is None else Basis.BOOKINGS if tracked else Basis.ALLOCATION,
        used=booked if tracked else allocated,
        # The same figure as free or physical (mostly) is taken as that object.
        placement_free=_as(placement_free, free),
        placement_max=_as(placement_max, physical),
    )


def _as(value: Decimal | None, same: Decimal | None) -> Decimal | None:
    """``same`` where ``value`` is the same figure spelled the same, else ``value``."""
    if value is None or same is None or value.compare_total(same):
        return value
    return same


def _floor_capacity(total: Decimal, reserved: Decimal, ratio: Decimal) -> Decimal:
    """floor((total - reserved) * ratio), all in CONTEXT.

    Never with the ``-`` operator: it rounds in the thread's default context, 28
    digits, so a large total would silently lose its last units.
    """
    return CONTEXT.to_integral_value(CONTEXT.multiply(CONTEXT.subtract(total, reserved), ratio))


def fits(
    hypervisor: Hypervisor, request: Mapping[str, Decimal], view: View = View.AVAILABLE
) -> bool:
    """Whether ``request`` (base units) fits on ``hypervisor`` in ``view``.

    Every requested resource must admit its amount (:func:`admits`); unknown never
    fits: in the BOOKINGS view, an untracked host never does.
    """
    return fitting(request, view)(hypervisor)


def fitting(
    request: Mapping[str, Decimal], view: View = View.AVAILABLE
) -> Callable[[Hypervisor], bool]:
    """:func:`fits` for one request and view, judging a host at a time: a filter
    judges every host of the fleet with it (20,000 for canFit's first count)."""
    judge, wanted = judged(view), tuple(request.items())

    def fit(hypervisor: Hypervisor) -> bool:
        resources, tracked = hypervisor.resources, hypervisor.bookings_tracked
        for name, amount in wanted:
            resource = resources.get(name)
            if resource is None:
                return False
            figure, maximum = judge(resource, tracked)
            if not admits(name, amount, figure, maximum):
                return False
        return True

    return fit


Bounds = tuple[Decimal | None, Decimal | None]


def judged(view: View) -> Callable[[ResourceCapacity, bool], Bounds]:
    """What a request is judged against in ``view``: (the free figure, max_unit), of a
    resource of a host whose bookings are tracked or not; None where unknown.

    Judged on bookings (the BOOKINGS view, or AVAILABLE on a tracked host), the room
    is Placement's own (:func:`placement_bounds`), so that a fit and a slot are
    exactly what Placement would grant; elsewhere the figures are the base-unit ones.
    """
    figure = figure_of(view)
    bookings = view is View.BOOKINGS
    available = view is View.AVAILABLE

    def bounds(resource: ResourceCapacity, tracked: bool) -> Bounds:
        if bookings or (available and tracked):
            return resource.placement_free, resource.placement_max
        return figure(resource), resource.physical

    return bounds


def placement_bounds(
    name: str,
    total: Decimal | None,
    ratio: Decimal,
    reserved: Decimal | None,
    used: Decimal | None,
) -> Bounds:
    """Free room and max_unit in base units, as Placement computes them.

    Placement counts memory in whole MiB (its MEMORY_MB total is the physical bytes
    truncated), and applies the allocation ratio in binary floating point:
    ``int((total - reserved) * allocation_ratio)``, so a 100-core host at 1.15 takes
    114 vCPUs there, not 115. The figures the API shows stay exact (section 4);
    only the question "would Placement grant it" is answered in its arithmetic.

    Computed once per resource when a record is made (:class:`ResourceCapacity`):
    a fleet's fits judge every host (1.3 us a resource, 27 of canFit's 42 ms over
    20,000 hosts when each fit worked it out again).
    """
    if total is None or reserved is None or used is None:
        return None, None
    if name == "memory":
        mib, held = _whole_mib(total), _whole_mib(reserved)
        room = mib - held if ratio == ONE else int(float(mib - held) * float(ratio))
        return Decimal((room - _whole_mib(used)) * _MIB), Decimal(mib * _MIB)
    unreserved = CONTEXT.subtract(total, reserved)
    if ratio == ONE:
        return CONTEXT.subtract(CONTEXT.to_integral_value(unreserved), used), total
    return CONTEXT.subtract(Decimal(int(float(unreserved) * float(ratio))), used), total


def _whole_mib(amount: Decimal) -> int:
    """Bytes in whole MiB, truncated toward zero as Placement's units are (int() of a
    Decimal truncates so, and so does the division of the truncated bytes)."""
    whole = int(amount)
    return whole // _MIB if whole >= 0 else -(-whole // _MIB)


def admits(
    name: str, amount: Decimal, figure: Decimal | None, maximum: Decimal | None
) -> bool | None:
    """Whether ``min_unit <= amount <= max_unit`` and ``amount <= figure``, the free
    figure of resource ``name``; None when the figure or max_unit is unknown.

    Domain brief, section 4: min_unit is one Placement unit (1 core, 1 MiB, 1 of
    anything else) and Nova sets max_unit to the physical total.
    """
    if figure is None or maximum is None:
        return None
    return min_unit(name) <= amount <= min(figure, maximum)


def min_unit(name: str) -> Decimal:
    """Placement's min_unit (1) in base units: one MiB of memory, one of anything else."""
    return MEBIBYTE if name == "memory" else ONE


# The Placement view, for cross-checking the Placement shim.

_CLASSES = {"cpu": "VCPU", "memory": "MEMORY_MB"}


def resource_class(name: str) -> str:
    """Placement resource class of a resource key: cpu -> VCPU, memory -> MEMORY_MB."""
    return _CLASSES.get(name, name)


def _to_placement(name: str, amount: Decimal) -> Decimal:
    """Base units to Placement units, truncated: bytes -> MiB for memory."""
    if name == "memory":
        return Decimal(_whole_mib(amount))
    return amount.to_integral_value(rounding=decimal.ROUND_DOWN)


def _known_to_placement(name: str, amount: Decimal | None) -> Decimal | None:
    return None if amount is None else _to_placement(name, amount)


@dataclasses.dataclass(frozen=True, slots=True)
class PlacementInventory:
    """One inventory record as ``GET /resource_providers/{uuid}/inventories`` shows it.

    ``reserved`` and ``used`` are None for a host whose bookings are not tracked:
    what Placement holds for it is not known here, which is not zero.
    """

    resource_class: str
    total: Decimal
    reserved: Decimal | None
    min_unit: Decimal
    max_unit: Decimal
    step_size: Decimal
    allocation_ratio: Decimal
    used: Decimal | None

    @property
    def capacity(self) -> Decimal:
        """floor((total - reserved) * allocation_ratio) in Placement units; reservations
        unknown: floor(total * allocation_ratio), as for the base-unit figure."""
        return _floor_capacity(self.total, self.reserved or ZERO, self.allocation_ratio)

    @property
    def free(self) -> Decimal | None:
        return None if self.used is None else CONTEXT.subtract(self.capacity, self.used)


def placement_inventories(hypervisor: Hypervisor) -> tuple[PlacementInventory, ...]:
    """Inventories for every resource with a known physical total, in Placement units."""
    return tuple(
        PlacementInventory(
            resource_class=resource_class(r.name),
            total=(total := _to_placement(r.name, r.physical)),
            reserved=_known_to_placement(r.name, r.reserved),
            min_unit=ONE,
            max_unit=total,
            step_size=ONE,
            allocation_ratio=r.overcommit_ratio,
            used=_known_to_placement(r.name, r.booked),
        )
        for r in hypervisor.resources.values()
        if r.physical is not None
    )


def placement_usages(hypervisor: Hypervisor) -> dict[str, Decimal] | None:
    """Usage per resource class: the sum of consumer allocations, in Placement units.

    None for a host whose bookings are not tracked: its usage is unknown, not zero.
    """
    if not hypervisor.bookings_tracked:
        return None
    return {
        resource_class(r.name): _to_placement(r.name, r.booked)
        for r in hypervisor.resources.values()
        if r.booked is not None and (r.booked or r.name in hypervisor.capacity)
    }
