"""Instance slots: how many more instances of one size fit, per host and per group.

Per host, in a chosen view (domain brief, section 4)::

    slots = min over requested r of floor(figure[r] / a_r)

0 when a figure is negative or the request does not fit at all (min_unit,
max_unit), unknown (None) when a figure it needs is unknown. A group adds the
known slots and says how many hosts have room (slots >= 1) and how many could not
be judged. Placement cannot answer this question; Cortex keeps it as a computed
resource (FlavorGroupCapacity: placeable VMs per flavor group and zone).

The group sums are a ledger's (:mod:`gateway.domain.ledger`): the store keeps those of
a catalog's flavors over the whole fleet per change, a filtered question or an
explicit request counts its hosts.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from decimal import Decimal

from gateway.domain import capacity, fleet
from gateway.domain.ledger import Entry, Ledger, Vector
from gateway.domain.quantity import CONTEXT
from gateway.domain.records import Basis, Hypervisor, View, figure_of

__all__ = ["HostSlots", "SlotGroup", "SlotTally", "host_slots", "read_groups", "slot_groups"]


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
    host_count: int
    #: Known slots summed; None when no host of the group could be judged.
    slots: int | None
    #: The part of ``slots`` judged on libvirt's allocation; None when no host was.
    allocation_slots: int | None
    hosts_with_room: int
    hosts_unknown: int
    #: The group's hosts: their slots one by one are only counted when asked for.
    members: Callable[[], Iterable[Hypervisor]] = dataclasses.field(
        hash=False, compare=False, repr=False
    )

    @property
    def hosts(self) -> tuple[HostSlots, ...]:
        count = _counter(self.request, self.view)
        return tuple(HostSlots(h, *count(h)) for h in self.members())


def host_slots(hypervisor: Hypervisor, request: Mapping[str, Decimal], view: View) -> HostSlots:
    """How many more instances asking ``request`` (base units, non-empty) fit on the host."""
    return HostSlots(hypervisor, *_counter(request, view)(hypervisor))


Counted = tuple[int | None, Basis | None]
_UNKNOWN: Counted = (None, None)


def _counter(request: Mapping[str, Decimal], view: View) -> Callable[[Hypervisor], Counted]:
    """A host's slots and basis for one request and view, with what they decide looked
    up once: a catalog's slots judge every host once per flavor."""
    figure = figure_of(view)
    tracked, untracked = (
        (Basis.BOOKINGS, Basis.ALLOCATION) if view is View.AVAILABLE else (Basis(view.value),) * 2
    )
    wanted = list(request.items())

    def count(hypervisor: Hypervisor) -> Counted:
        least: Decimal | None = None
        fits = True
        resources = hypervisor.resources
        for name, amount in wanted:
            resource = resources.get(name)
            if resource is None:
                return _UNKNOWN
            known = figure(resource)
            admitted = capacity.admits(resource, amount, known)
            if known is None or admitted is None:
                return _UNKNOWN
            if not admitted:  # below min_unit (a zero amount), or a negative figure
                fits = False
            elif fits:
                slots = CONTEXT.divide_int(known, amount)
                least = slots if least is None or slots < least else least
        return (int(least) if fits and least is not None else 0), (
            tracked if hypervisor.bookings_tracked else untracked
        )

    return count


@dataclasses.dataclass(frozen=True)
class SlotTally:
    """What one host adds to the slot counts of its groups, per request: the tally of
    a ledger (:mod:`gateway.domain.ledger`), one per catalog, view and grouping.

    Per group and request (a flavor's name), the vector is: hosts, hosts judged,
    their slots, hosts judged on allocation, their slots, hosts with room, hosts
    that could not be judged.
    """

    requests: tuple[tuple[str | None, tuple[tuple[str, Decimal], ...]], ...]
    view: View
    grouping: fleet.Grouping

    @classmethod
    def of(
        cls,
        requests: Iterable[tuple[str | None, Mapping[str, Decimal]]],
        view: View,
        grouping: fleet.Grouping,
    ) -> SlotTally:
        return cls(tuple((n, tuple(r.items())) for n, r in requests), view, grouping)

    @functools.cached_property
    def _counters(self) -> list[tuple[str | None, Callable[[Hypervisor], Counted]]]:
        return [(name, _counter(dict(request), self.view)) for name, request in self.requests]

    def __call__(self, hypervisor: Hypervisor) -> Iterator[Entry]:
        rows = [(name, _vector(*count(hypervisor))) for name, count in self._counters]
        for key in fleet.group_keys(self.grouping)(hypervisor):
            for name, row in rows:
                yield key, name, row


_ONE, _ZERO = Decimal(1), Decimal(0)
_NOT_JUDGED: Vector = (_ONE, _ZERO, _ZERO, _ZERO, _ZERO, _ZERO, _ONE)


def _vector(slots: int | None, basis: Basis | None) -> Vector:
    if slots is None:
        return _NOT_JUDGED
    counted = Decimal(slots)
    room = _ONE if slots else _ZERO
    if basis is Basis.ALLOCATION:
        return (_ONE, _ONE, counted, _ONE, counted, room, _ZERO)
    return (_ONE, _ONE, counted, _ZERO, _ZERO, room, _ZERO)


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
        if amount < 0:
            raise ValueError(f"the amount of {name} must not be negative, got {amount}")
    hosts = list(hypervisors)
    members = dict(fleet.group(hosts, grouping))
    ledger = Ledger.of(SlotTally.of([(flavor, request)], view, grouping), hosts)
    return read_groups(ledger, flavor, lambda key: members[key])


def read_groups(
    ledger: Ledger, flavor: str | None, members: Callable[[str | None], Iterable[Hypervisor]]
) -> list[SlotGroup]:
    """The slot groups of one request (``flavor``) that a ledger of :class:`SlotTally`
    keeps; ``members`` gives a group's hosts, in name order, when they are asked for.

    NONE gives one group even over no hosts at all.
    """
    tally = ledger.tally
    assert isinstance(tally, SlotTally), "a ledger of slots"
    request = dict(dict(tally.requests)[flavor])
    keys = [k for k in ledger.groups if flavor in ledger.groups[k]]
    if tally.grouping is fleet.Grouping.NONE and not keys:
        keys = [None]
    groups = []
    for key in fleet.ordered_keys(keys):  # type: ignore[arg-type]
        row = ledger.groups.get(key, {}).get(flavor, _EMPTY)
        hosts, judged, slots, on_allocation, allocation_slots, room, unknown = map(int, row)
        groups.append(
            SlotGroup(
                key,
                flavor,
                request,
                tally.view,
                hosts,
                slots if judged else None,
                allocation_slots if on_allocation else None,
                room,
                unknown,
                functools.partial(members, key),
            )
        )
    return groups


_EMPTY: Vector = (_ZERO,) * 7
