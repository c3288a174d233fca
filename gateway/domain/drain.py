"""Drain plans: if these hosts were emptied, where would their instances go (domain
brief, section 9)?

Read-only and at once, for many hosts: a what-if, not an action. Every consumer
booked on a drained host is placed, one by one in a fixed order, on a host of its
zone that the scheduler would use for it and where its resources still fit after
the moves planned before it:

- **order**: largest memory first, then cpu, then UUID, then the host it leaves
  (a consumer in a live migration is booked on two hosts: drained from one, it
  keeps the other booking, and each drained booking moves on its own);
- **where**: a host of the same zone, not drained, ready, enabled, open to the
  consumer's project (section 8, rules 1-3), and of the same isolation as the host
  it leaves (rule 5: an instance of a HANA host stays on HANA hosts, a general one
  on hosts no aggregate isolates);
- **fit**: every resource of its booking admitted by the target's figure in the
  chosen view, less what the plan moved there before (judged as slots judge:
  :func:`gateway.domain.capacity.judged`);
- **choice**: the host left with the least memory after it (best fit), ties by name.

The plan is valid (no target over its figure, drained, ineligible or in another
zone) and maximal: a consumer left unplaced fits on no eligible host with what the
plan leaves there, since it was tried on every one and later moves only take room.

An untracked drained host has no bookings: its instances' sizes and projects are
unknown. It is judged in aggregate, its allocation against what the zone's eligible
hosts (of its isolation, open to every project) have left unallocated after the
exact moves (libvirt's view, as its allocation is), and the plan is then not exact.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal

import msgspec

from gateway.domain import capacity
from gateway.domain.eligibility import HostFacts, host_facts
from gateway.domain.quantity import CONTEXT
from gateway.domain.records import Amounts, Hypervisor, ResourceCapacity, View, add_amounts

__all__ = ["DrainPlan", "Estimate", "Move", "Unplaced", "after_drain", "plan_drain"]

_ZERO = Decimal(0)
_MEMORY = "memory"
#: Consumers placed between two looks at the request's budget.
CHECK_EVERY = 64


@dataclasses.dataclass(frozen=True, slots=True)
class Move:
    uuid: str
    source: str
    target: str
    resources: Amounts


@dataclasses.dataclass(frozen=True, slots=True)
class Unplaced:
    uuid: str
    source: str
    resources: Amounts
    reason: str


@dataclasses.dataclass(frozen=True, slots=True)
class Estimate:
    """An untracked drained host, judged in aggregate: its allocation against what its
    zone's eligible hosts have left (``left``, per resource) after the exact moves."""

    host: str
    zone: str | None
    allocation: Amounts
    left: Mapping[str, Decimal | None]
    fits: bool


@dataclasses.dataclass(frozen=True, slots=True)
class DrainPlan:
    drained: tuple[str, ...]
    view: View
    moves: tuple[Move, ...]
    unplaced: tuple[Unplaced, ...]
    estimates: tuple[Estimate, ...]

    @property
    def exact(self) -> bool:
        """Whether every drained host's instances were placed one by one."""
        return not self.estimates


class _Target:
    """A host that may take moved consumers, with the room the plan left it: in the
    plan's view, and unallocated (libvirt's view, which estimates are judged in)."""

    __slots__ = ("facts", "host", "room", "unallocated")

    def __init__(self, host: Hypervisor, view: View) -> None:
        self.host = host
        self.facts = host_facts(host)
        judge = capacity.judged(view)
        tracked = host.bookings_tracked
        self.room = {n: judge(r, tracked) for n, r in host.resources.items()}
        self.unallocated = {n: r.unallocated for n, r in host.resources.items()}

    def memory(self) -> Decimal | None:
        return self.room.get(_MEMORY, (None, None))[0]

    def knows(self, amounts: Amounts) -> bool:
        """Whether the figures (and max_unit) of every resource of ``amounts`` are known."""
        return all(None not in self.room.get(name, (None, None)) for name in amounts)

    def admits(self, amounts: Amounts) -> bool:
        for name, amount in amounts.items():
            figure, maximum = self.room.get(name, (None, None))
            if not capacity.admits(name, amount, figure, maximum):
                return False
        return True

    def take(self, amounts: Amounts) -> None:
        for name, amount in amounts.items():
            figure, maximum = self.room[name]
            assert figure is not None, "a target takes only what it admits"
            self.room[name] = (CONTEXT.subtract(figure, amount), maximum)
            if (unallocated := self.unallocated[name]) is not None:
                self.unallocated[name] = CONTEXT.subtract(unallocated, amount)


def plan_drain(
    hypervisors: Iterable[Hypervisor],
    drained: Iterable[str],
    view: View = View.AVAILABLE,
    check: Callable[[], None] = lambda: None,
) -> DrainPlan:
    """The plan for draining the hosts named ``drained`` out of ``hypervisors``;
    ``check`` is called every few consumers (a request's budget)."""
    hosts = {h.name: h for h in hypervisors}
    gone = sorted(set(drained))
    by_zone: dict[str | None, list[_Target]] = defaultdict(list)
    for host in hosts.values():
        if host.name not in gone:
            by_zone[host.zone].append(_Target(host, view))
    pools = _Pools(by_zone)
    moves: list[Move] = []
    unplaced: list[Unplaced] = []
    for count, (source, uuid, amounts, project) in enumerate(_consumers(hosts, gone)):
        if count % CHECK_EVERY == 0:
            check()
        target, reason = pools.place(source, amounts, project)
        if target is None:
            unplaced.append(Unplaced(uuid, source.name, amounts, reason))
        else:
            moves.append(Move(uuid, source.name, target.host.name, amounts))
    estimates = tuple(
        _estimate(hosts[name], by_zone.get(hosts[name].zone, []))
        for name in gone
        if not hosts[name].bookings_tracked
    )
    return DrainPlan(tuple(gone), view, tuple(moves), tuple(unplaced), estimates)


def _consumers(
    hosts: Mapping[str, Hypervisor], gone: Sequence[str]
) -> list[tuple[Hypervisor, str, Amounts, str | None]]:
    """Every consumer booking of the drained hosts (a UUID booked twice on a host is
    one claim of both), in the order they are placed."""
    items = []
    for name in gone:
        source = hosts[name]
        claims: dict[str, list[Amounts]] = defaultdict(list)
        projects: dict[str, str | None] = {}
        for booking in source.consumers:
            claims[booking.uuid].append(booking.resources)
            projects.setdefault(booking.uuid, booking.project_id)
        for uuid, parts in claims.items():
            amounts = parts[0] if len(parts) == 1 else add_amounts(parts)
            items.append((source, uuid, amounts, projects[uuid]))
    items.sort(
        key=lambda item: (
            -item[2].get(_MEMORY, _ZERO),
            -item[2].get("cpu", _ZERO),
            item[1],
            item[0].name,
        )
    )
    return items


class _Pools:
    """The zone's eligible targets per isolation, sorted by the memory they have left,
    so that the best fit is found by bisection, not by a look at every host."""

    def __init__(self, by_zone: Mapping[str | None, list[_Target]]) -> None:
        self._pools: dict[tuple[str | None, frozenset[str]], list[tuple[Decimal, str, _Target]]]
        self._pools = defaultdict(list)
        #: Targets whose memory figure is unknown: tried in name order after the others.
        self._blind: dict[tuple[str | None, frozenset[str]], list[_Target]] = defaultdict(list)
        #: What isolates each drained host's aggregates (its instances stay within it).
        self._isolation: dict[str, frozenset[str]] = {}
        #: Requests no target took, and why: room only shrinks, so the same request fails
        #: again (a full zone's consumers, mostly of a few flavors, are not tried host by host).
        self._failed: dict[tuple[object, ...], str] = {}
        for zone, targets in by_zone.items():
            for target in sorted(targets, key=lambda t: t.host.name):
                facts = target.facts
                if not facts.ready or facts.disabled:
                    continue
                key = (zone, facts.isolating)
                memory = target.memory()
                if memory is None:
                    self._blind[key].append(target)
                else:
                    self._pools[key].append((memory, target.host.name, target))
        for pool in self._pools.values():
            pool.sort(key=lambda entry: entry[:2])

    def place(
        self, source: Hypervisor, amounts: Amounts, project: str | None
    ) -> tuple[_Target | None, str]:
        isolation = self._isolation.get(source.name)
        if isolation is None:
            isolation = self._isolation[source.name] = host_facts(source).isolating
        key = (source.zone, isolation)
        pool, blind = self._pools.get(key, []), self._blind.get(key, [])
        asked = (key, project, *sorted(amounts.items()))
        failed = self._failed.get(asked)
        if failed is not None:
            return None, failed
        wanted = amounts.get(_MEMORY, _ZERO)
        start = bisect.bisect_left(pool, (wanted, ""), key=lambda entry: entry[:2])
        for index in range(start, len(pool)):
            target = pool[index][2]
            if _open(target.facts, project) and target.admits(amounts):
                target.take(amounts)
                del pool[index]
                left = target.memory()
                assert left is not None
                bisect.insort(pool, (left, target.host.name, target), key=lambda e: e[:2])
                return target, ""
        for target in blind:
            if _open(target.facts, project) and target.admits(amounts):
                target.take(amounts)
                return target, ""
        failed = self._failed[asked] = _why(
            source.zone, [*(e[2] for e in pool), *blind], amounts, project
        )
        return None, failed


def _why(
    zone: str | None, targets: Sequence[_Target], amounts: Amounts, project: str | None
) -> str:
    """Why none of the zone's ``targets`` (of the consumer's isolation, ready and
    enabled) took a consumer: none open to its project, none that knows the figures
    it needs, or none with room left."""
    open_to_it = [t for t in targets if _open(t.facts, project)]
    if not open_to_it:
        return f"no host in zone {zone} the scheduler would use for it"
    if not any(t.knows(amounts) for t in open_to_it):
        needed = ", ".join(sorted(amounts))
        return f"no eligible host in zone {zone} knows its figures of {needed}"
    return f"no eligible host in zone {zone} has room for it"


def _open(facts: HostFacts, project: str | None) -> bool:
    return not facts.allowed_projects or project in facts.allowed_projects


def _estimate(host: Hypervisor, targets: Sequence[_Target]) -> Estimate:
    """An untracked host's allocation against what its zone's eligible hosts of its
    isolation have left unallocated (the domain brief's "remaining unallocated
    figure": libvirt's view, as its allocation is, whatever the plan's), in aggregate."""
    isolation = host_facts(host).isolating
    # Its instances' projects are unknown too: only hosts open to every project count.
    eligible = [
        t
        for t in targets
        if t.facts.ready
        and not t.facts.disabled
        and _open(t.facts, None)
        and t.facts.isolating == isolation
    ]
    left: dict[str, Decimal | None] = {}
    for name in host.allocation:
        figures = [t.unallocated.get(name) for t in eligible]
        known = [f for f in figures if f is not None and f > 0]
        left[name] = sum(known, _ZERO) if known else None
    fits = all(
        (room := left[name]) is not None and amount <= room
        for name, amount in host.allocation.items()
        if amount > 0
    )
    return Estimate(host.name, host.zone, host.allocation, left, fits)


def after_drain(hypervisors: Iterable[Hypervisor], plan: DrainPlan) -> list[Hypervisor]:
    """The fleet as the plan leaves it: drained hosts left out, each target's booked
    and allocated figures (where known) grown by what moved there."""
    moved: dict[str, list[Amounts]] = defaultdict(list)
    for move in plan.moves:
        moved[move.target].append(move.resources)
    gone = set(plan.drained)
    return [
        _grown(h, add_amounts(moved[h.name])) if h.name in moved else h
        for h in hypervisors
        if h.name not in gone
    ]


def _grown(host: Hypervisor, added: Amounts) -> Hypervisor:
    resources = dict(host.resources)
    for name, amount in added.items():
        resources[name] = _took(resources[name], amount)
    return msgspec.structs.replace(host, resources=resources)


def _took(resource: ResourceCapacity, amount: Decimal) -> ResourceCapacity:
    """A resource's figures after an instance of ``amount`` came: booked where tracked,
    allocated where reported, and every figure that follows from them, made as the
    record's own are (capacity.resource)."""

    def plus(value: Decimal | None) -> Decimal | None:
        return None if value is None else CONTEXT.add(value, amount)

    return capacity.resource(
        resource.name,
        resource.physical,
        resource.overcommit_ratio,
        resource.reserved,
        plus(resource.booked),
        plus(resource.allocated),
        resource.effective_capacity,
    )
