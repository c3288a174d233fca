"""Free capacity with Placement semantics (domain brief, sections 4 and 6).

For each resource ``r`` of a hypervisor::

    capacity[r] = floor((physical[r] - reserved[r]) * ratio[r])
    free[r]     = capacity[r] - booked[r]

The overcommit ratio applies after the reservation is removed, figures are floored
in base units (cores, bytes), and anything that depends on an unknown physical
figure is unknown (``None``), never zero.
"""

from __future__ import annotations

import dataclasses
import decimal
from collections.abc import Iterable, Mapping
from decimal import Decimal

from gateway.domain import Amounts, Hypervisor, ResourceCapacity
from gateway.quantity import CONTEXT

__all__ = [
    "PlacementInventory",
    "compute_resources",
    "fits",
    "placement_inventories",
    "placement_usages",
    "resource_class",
]

ONE = Decimal(1)
ZERO = Decimal(0)
MEBIBYTE = Decimal(2**20)


def compute_resources(
    *,
    physical: Amounts,
    overcommit: Amounts,
    reserved: Amounts,
    booked: Amounts,
    allocated: Amounts,
    effective: Amounts,
) -> dict[str, ResourceCapacity]:
    """One :class:`ResourceCapacity` per resource seen in capacity, bookings or allocation."""
    names = sorted({*physical, *reserved, *booked, *allocated})
    return {
        name: _resource(
            name,
            physical.get(name),
            overcommit.get(name, ONE),
            reserved.get(name, ZERO),
            booked.get(name, ZERO),
            allocated.get(name),
            effective.get(name),
        )
        for name in names
    }


def _resource(
    name: str,
    physical: Decimal | None,
    ratio: Decimal,
    reserved: Decimal,
    booked: Decimal,
    allocated: Decimal | None,
    effective: Decimal | None,
) -> ResourceCapacity:
    capacity = free = unallocated = None
    if physical is not None:
        capacity = _floor_capacity(physical, reserved, ratio)
        free = CONTEXT.subtract(capacity, booked)
        if allocated is not None:
            unallocated = CONTEXT.subtract(capacity, allocated)
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
    )


def _floor_capacity(total: Decimal, reserved: Decimal, ratio: Decimal) -> Decimal:
    """floor((total - reserved) * ratio), all in CONTEXT.

    Never with the ``-`` operator: it rounds in the thread's default context, 28
    digits, so a large total would silently lose its last units.
    """
    return CONTEXT.to_integral_value(CONTEXT.multiply(CONTEXT.subtract(total, reserved), ratio))


def fits(hypervisor: Hypervisor, request: Mapping[str, Decimal]) -> bool:
    """Whether Placement would admit ``request`` (base units) on ``hypervisor``.

    Each amount must satisfy ``min_unit <= amount <= max_unit`` and ``amount <= free``
    (domain brief, section 6): min_unit is one Placement unit (1 core, 1 MiB, 1 of
    anything else) and Nova sets max_unit to the physical total. Unknown capacity
    never fits.
    """
    for name, amount in request.items():
        resource = hypervisor.resources.get(name)
        if resource is None or resource.free is None or resource.physical is None:
            return False
        if not min_unit(name) <= amount <= min(resource.free, resource.physical):
            return False
    return True


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
        amount = CONTEXT.divide(amount, MEBIBYTE)
    return amount.to_integral_value(rounding=decimal.ROUND_DOWN)


@dataclasses.dataclass(frozen=True, slots=True)
class PlacementInventory:
    """One inventory record as ``GET /resource_providers/{uuid}/inventories`` shows it."""

    resource_class: str
    total: Decimal
    reserved: Decimal
    min_unit: Decimal
    max_unit: Decimal
    step_size: Decimal
    allocation_ratio: Decimal
    used: Decimal

    @property
    def capacity(self) -> Decimal:
        """floor((total - reserved) * allocation_ratio), floored in Placement units."""
        return _floor_capacity(self.total, self.reserved, self.allocation_ratio)

    @property
    def free(self) -> Decimal:
        return CONTEXT.subtract(self.capacity, self.used)


def placement_inventories(hypervisor: Hypervisor) -> tuple[PlacementInventory, ...]:
    """Inventories for every resource with a known physical total, in Placement units."""
    return tuple(
        PlacementInventory(
            resource_class=resource_class(r.name),
            total=(total := _to_placement(r.name, r.physical)),
            reserved=_to_placement(r.name, r.reserved),
            min_unit=ONE,
            max_unit=total,
            step_size=ONE,
            allocation_ratio=r.overcommit_ratio,
            used=_to_placement(r.name, r.booked),
        )
        for r in hypervisor.resources.values()
        if r.physical is not None
    )


def placement_usages(hypervisor: Hypervisor) -> dict[str, Decimal]:
    """Usage per resource class: the sum of consumer allocations, in Placement units."""
    return {
        resource_class(r.name): _to_placement(r.name, r.booked)
        for r in hypervisor.resources.values()
        if r.booked or r.name in hypervisor.capacity
    }


def sum_known(values: Iterable[Decimal | None]) -> tuple[Decimal, int]:
    """Sum the known values; also return how many were unknown."""
    total, unknown = Decimal(0), 0
    for value in values:
        if value is None:
            unknown += 1
        else:
            total = CONTEXT.add(total, value)
    return total, unknown
