"""Instance slots: how many more instances of one flavor the scheduler could place,
per host and per group.

A host the scheduler would not use for the request has none, whatever is free on it
(:mod:`gateway.domain.eligibility`: not ready, disabled, restricted to other
projects, traits, isolated or mismatched aggregates); the group counts such hosts
per reason. On an eligible host, in a chosen view (domain brief, section 4)::

    slots = min over requested r of floor(figure[r] / a_r)

0 when a figure is negative or the request does not fit at all (min_unit,
max_unit), even where another figure is unknown; else unknown (None) when a figure
it needs is unknown. Judged on bookings, memory is counted in Placement's whole MiB
(:func:`gateway.domain.capacity.judged`), so that a tracked host's slots are
exactly what Placement would grant. A group adds
the known slots and says how many hosts have room (slots >= 1), how many could not
be judged and how many were excluded, so that

    hosts = with room + eligible without room + unknown + excluded.

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
from gateway.domain.demand import Demand
from gateway.domain.eligibility import HostFacts, Reason, first_reason, host_facts
from gateway.domain.ledger import Cells, Entry, Ledger, Vector
from gateway.domain.quantity import CONTEXT
from gateway.domain.records import Basis, Hypervisor, View

__all__ = ["HostSlots", "SlotGroup", "SlotTally", "host_slots", "read_groups", "slot_groups"]


@dataclasses.dataclass(frozen=True, slots=True)
class HostSlots:
    """The slots of one host; ``slots`` None when a figure it needs is unknown, 0 when
    the scheduler would not use the host (``reason``)."""

    hypervisor: Hypervisor
    slots: int | None
    #: The view the figures came from (AVAILABLE: the host's own basis); None when unknown.
    basis: Basis | None
    #: The first rule the host fails for the request; None: it is eligible.
    reason: Reason | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class SlotGroup:
    key: str | None
    #: The catalog flavor asked about; None for an explicit request.
    flavor: str | None
    demand: Demand
    view: View
    #: The project the question is asked for (hosts restricted to it are admitted).
    project: str | None
    host_count: int
    #: Known slots summed (an excluded host's are 0); None when no host is known.
    slots: int | None
    #: The part of ``slots`` judged on libvirt's allocation; None when no host was.
    allocation_slots: int | None
    hosts_with_room: int
    hosts_unknown: int
    #: Hosts left out per reason, in the order of the rules; reasons with none left out.
    excluded: tuple[tuple[Reason, int], ...]
    #: The group's hosts: their slots one by one are only counted when asked for.
    members: Callable[[], Iterable[Hypervisor]] = dataclasses.field(
        hash=False, compare=False, repr=False
    )

    @property
    def request(self) -> Mapping[str, Decimal]:
        return self.demand.amounts

    @property
    def hosts(self) -> tuple[HostSlots, ...]:
        count = _Counter(self.demand, self.view, self.project)
        return tuple(host_slots_of(h, count) for h in self.members())


def host_slots(
    hypervisor: Hypervisor, demand: Demand, view: View, project: str | None = None
) -> HostSlots:
    """How many more instances asking ``demand`` the scheduler could place on the host."""
    return host_slots_of(hypervisor, _Counter(demand, view, project))


def host_slots_of(hypervisor: Hypervisor, count: _Counter) -> HostSlots:
    facts, bounds = host_facts(hypervisor), _bounds(hypervisor, count.view)
    return HostSlots(hypervisor, *count(facts, bounds, hypervisor.bookings_tracked))


Counted = tuple[int | None, Basis | None, Reason | None]
_UNKNOWN: Counted = (None, None, None)
Bounds = dict[str, capacity.Bounds]


def _bounds(hypervisor: Hypervisor, view: View) -> Bounds:
    """Every resource's (figure, max_unit) in ``view``: once per host, for every request."""
    judge = capacity.judged(view)
    tracked = hypervisor.bookings_tracked
    return {name: judge(r, tracked) for name, r in hypervisor.resources.items()}


class _Counter:
    """A host's slots, basis and reason for one request, view and project, with what
    they decide looked up once: a catalog's slots judge every host once per flavor."""

    __slots__ = ("basis", "demand", "project", "view", "wanted")

    def __init__(self, demand: Demand, view: View, project: str | None) -> None:
        self.demand, self.view, self.project = demand, view, project
        self.wanted = demand.resources
        self.basis = (
            (Basis.BOOKINGS, Basis.ALLOCATION)
            if view is View.AVAILABLE
            else (Basis(view.value),) * 2
        )

    def __call__(self, facts: HostFacts, bounds: Bounds, tracked: bool) -> Counted:
        reason = first_reason(facts, self.demand, self.project)
        if reason is not None:
            return 0, None, reason
        if self.demand.unjudged is not None:
            return _UNKNOWN
        least: Decimal | None = None
        fits, known = True, True
        for name, amount in self.wanted:
            figure, maximum = bounds.get(name, (None, None))
            admitted = capacity.admits(name, amount, figure, maximum)
            if admitted is None:
                known = False
            elif not admitted:  # below min_unit (a zero amount), or a negative figure
                fits = False
            elif fits:
                slots = CONTEXT.divide_int(figure, amount)  # type: ignore[arg-type]
                least = slots if least is None or slots < least else least
        if fits and not known:
            return _UNKNOWN
        # A figure that does not admit one instance makes 0, whatever the unknown ones are.
        basis = self.basis[0 if tracked else 1]
        return (int(least) if fits and least is not None else 0), basis, None


@dataclasses.dataclass(frozen=True)
class SlotTally:
    """What one host adds to the slot counts of its groups, per request: the tally of
    a ledger (:mod:`gateway.domain.ledger`), one per catalog, view, grouping and project.

    Per group and request (a flavor's name), the vector is: hosts, hosts judged,
    their slots, hosts judged on allocation, their slots, hosts with room, hosts
    that could not be judged, then the hosts excluded under each reason.
    """

    requests: tuple[tuple[str | None, Demand], ...]
    view: View
    grouping: fleet.Grouping
    project: str | None = None

    @classmethod
    def of(
        cls,
        requests: Iterable[tuple[str | None, Demand]],
        view: View,
        grouping: fleet.Grouping,
        project: str | None = None,
    ) -> SlotTally:
        return cls(tuple(requests), view, grouping, project)

    @functools.cached_property
    def _counters(self) -> list[tuple[str | None, _Counter]]:
        return [(name, _Counter(demand, self.view, self.project)) for name, demand in self.requests]

    def __call__(self, hypervisor: Hypervisor) -> Iterator[Entry]:
        facts, bounds = host_facts(hypervisor), _bounds(hypervisor, self.view)
        tracked = hypervisor.bookings_tracked
        rows = [(name, _vector(*count(facts, bounds, tracked))) for name, count in self._counters]
        for key in fleet.group_keys(self.grouping)(hypervisor):
            for name, row in rows:
                yield key, name, row


_ONE, _ZERO = Decimal(1), Decimal(0)
_REASONS = tuple(Reason)
_NO_EXCLUSION = (_ZERO,) * len(_REASONS)
_NOT_JUDGED: Vector = (_ONE, _ZERO, _ZERO, _ZERO, _ZERO, _ZERO, _ONE, *_NO_EXCLUSION)
_EXCLUDED: dict[Reason, Vector] = {
    reason: (_ONE, *(_ZERO,) * 6, *(_ONE if r is reason else _ZERO for r in _REASONS))
    for reason in _REASONS
}


def _vector(slots: int | None, basis: Basis | None, reason: Reason | None) -> Vector:
    if reason is not None:
        return _EXCLUDED[reason]
    if slots is None:
        return _NOT_JUDGED
    counted = Decimal(slots)
    room = _ONE if slots else _ZERO
    if basis is Basis.ALLOCATION:
        return (_ONE, _ONE, counted, _ONE, counted, room, _ZERO, *_NO_EXCLUSION)
    return (_ONE, _ONE, counted, _ZERO, _ZERO, room, _ZERO, *_NO_EXCLUSION)


def slot_groups(
    hypervisors: Iterable[Hypervisor],
    demand: Demand,
    grouping: fleet.Grouping,
    view: View = View.AVAILABLE,
    flavor: str | None = None,
    project: str | None = None,
) -> list[SlotGroup]:
    """Slots per group (ordered as fleet totals are); raises ValueError for a bad request."""
    if not demand.resources:
        raise ValueError("a request needs at least one resource")
    for name, amount in demand.resources:
        if amount < 0:
            raise ValueError(f"the amount of {name} must not be negative, got {amount}")
    hosts = list(hypervisors)
    members = dict(fleet.group(hosts, grouping))
    ledger = Ledger.of(SlotTally.of([(flavor, demand)], view, grouping, project), hosts)
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
    demand = dict(tally.requests)[flavor]
    keys = [k for k in ledger.groups if flavor in ledger.groups[k]]
    if tally.grouping is fleet.Grouping.NONE and not keys:
        keys = [None]
    groups = []
    for key in fleet.ordered_keys(keys):  # type: ignore[arg-type]
        row = [int(n) for n in ledger.groups.get(key, Cells()).get(flavor, _EMPTY)]
        hosts, judged, slots, on_allocation, allocation_slots, room, unknown = row[:7]
        excluded = row[7:]
        groups.append(
            SlotGroup(
                key,
                flavor,
                demand,
                tally.view,
                tally.project,
                hosts,
                # An excluded host is known to take none: 0, not unknown; but a flavor
                # that cannot be judged has no slots to sum (Flavor.judged).
                slots if (judged or any(excluded)) and demand.unjudged is None else None,
                allocation_slots if on_allocation else None,
                room,
                unknown,
                tuple((r, n) for r, n in zip(_REASONS, excluded, strict=True) if n),
                functools.partial(members, key),
            )
        )
    return groups


_EMPTY: Vector = (_ZERO,) * (7 + len(_REASONS))
