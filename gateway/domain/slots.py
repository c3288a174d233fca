"""Instance slots: how many more instances of one size fit, per host and per group.

Per host, in a chosen view (domain brief, section 4)::

    slots = min over requested r of floor(figure[r] / a_r)

0 when a figure is negative or the request does not fit at all (min_unit,
max_unit), unknown (None) when a figure it needs is unknown. A group adds the
known slots and says how many hosts have room (slots >= 1) and how many could not
be judged. Placement cannot answer this question; Cortex keeps it as a computed
resource (FlavorGroupCapacity: placeable VMs per flavor group and zone).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal

from gateway.domain import capacity, fleet
from gateway.domain.quantity import CONTEXT
from gateway.domain.records import Basis, Hypervisor, View, figure_of

__all__ = ["HostSlots", "SlotGroup", "host_slots", "slot_groups"]


@dataclasses.dataclass(frozen=True, slots=True)
class HostSlots:
    """The slots of one host; ``slots`` None when a figure it needs is unknown."""

    hypervisor: Hypervisor
    slots: int | None
    #: The view the figures came from (AVAILABLE: the host's own basis); None when unknown.
    basis: Basis | None


@dataclasses.dataclass(frozen=True, slots=True)
class SlotGroup:
    key: str | None
    #: The catalog flavor asked about; None for an explicit request.
    flavor: str | None
    request: Mapping[str, Decimal] = dataclasses.field(hash=False)
    view: View
    hosts: tuple[HostSlots, ...]

    @property
    def slots(self) -> int | None:
        """Known slots summed; None when no host of the group could be judged."""
        known = [h.slots for h in self.hosts if h.slots is not None]
        return sum(known) if known else None

    @property
    def allocation_slots(self) -> int | None:
        """The part of ``slots`` judged on libvirt's allocation; None when no host was."""
        known = [h.slots for h in self.hosts if h.basis is Basis.ALLOCATION and h.slots is not None]
        return sum(known) if known else None

    @property
    def hosts_with_room(self) -> int:
        return sum(1 for h in self.hosts if h.slots)

    @property
    def hosts_unknown(self) -> int:
        return sum(1 for h in self.hosts if h.slots is None)


def host_slots(hypervisor: Hypervisor, request: Mapping[str, Decimal], view: View) -> HostSlots:
    """How many more instances asking ``request`` (base units, non-empty) fit on the host."""
    return _counter(request, view)(hypervisor)


def _counter(request: Mapping[str, Decimal], view: View) -> Callable[[Hypervisor], HostSlots]:
    """:func:`host_slots` for one request and view, with what they decide looked up once:
    a catalog's slots judge every host once per flavor."""
    figure = figure_of(view)
    tracked, untracked = (
        (Basis.BOOKINGS, Basis.ALLOCATION) if view is View.AVAILABLE else (Basis(view.value),) * 2
    )
    wanted = list(request.items())

    def count(hypervisor: Hypervisor) -> HostSlots:
        counts: list[Decimal] | None = []
        for name, amount in wanted:
            resource = hypervisor.resources.get(name)
            if resource is None:
                return HostSlots(hypervisor, None, None)
            known = figure(resource)
            admitted = capacity.admits(resource, amount, known)
            if known is None or admitted is None:
                return HostSlots(hypervisor, None, None)
            if not admitted:  # also every negative figure: the amount is positive
                counts = None
            elif counts is not None:
                counts.append(CONTEXT.divide_int(known, amount))
        slots = 0 if counts is None else int(min(counts))
        return HostSlots(hypervisor, slots, tracked if hypervisor.bookings_tracked else untracked)

    return count


def slot_groups(
    hypervisors: Iterable[Hypervisor],
    request: Mapping[str, Decimal],
    grouping: fleet.Grouping,
    view: View = View.AVAILABLE,
    flavor: str | None = None,
) -> list[SlotGroup]:
    """Slots per group (ordered as fleet totals are); raises ValueError for a bad request."""
    if not request:
        raise ValueError("a request needs at least one resource")
    for name, amount in request.items():
        if amount <= 0:
            raise ValueError(f"the amount of {name} must be positive, got {amount}")
    count = _counter(request, view)
    return [
        SlotGroup(key, flavor, request, view, tuple(count(h) for h in hosts))
        for key, hosts in fleet.group(hypervisors, grouping)
    ]
