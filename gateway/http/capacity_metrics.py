"""Capacity series for Prometheus, served at ``/metrics/capacity``.

The operator's dashboards read kube-state-metrics series, which copy fields but
cannot compute free capacity; the gateway does (:mod:`gateway.domain.capacity`), so it
exports it, in three kinds of series:

- per hypervisor and resource (``hypervisor_gateway_hypervisor_<figure>``): the
  figures of :class:`~gateway.domain.records.ResourceCapacity`, labelled with
  ``resource`` and the host labels kube-state-metrics puts on the operator's
  Hypervisor series (``name``, ``zone``, ``building_block``, ``worker_group``,
  ``maintenance``), so that the two join in PromQL;
- per zone and building block (``hypervisor_gateway_fleet_<figure>`` and host
  counts): the fleet totals of :mod:`gateway.domain.fleet`;
- per zone, building block and catalog flavor (``hypervisor_gateway_flavor_*``):
  instance slots (:mod:`gateway.domain.slots`, the AVAILABLE view).

An unknown figure is an absent series, never 0: a sum in PromQL then adds what
is known, as the fleet totals do. One family per figure, with a ``resource``
label and no unit in the name: cpu is in cores, memory in bytes, any other
resource in its own unit (what a booking or flavor counts), as in
kube-state-metrics' ``kube_node_status_capacity``. Numbers are written exactly
(the Decimal's digits); Prometheus reads them as float64.

At 20,000 hosts there are some 300,000 samples, far too many to format at every
scrape, and a node agent rewrites every host's status each minute, so a record
is new at nearly every scrape while its figures mostly are not. A host's lines
are therefore formatted again only when its figures or labels changed, a
group's totals and slots only when one of its members' did, and the whole text
once per snapshot. A scrape reads only the shards of the fleet map that changed
since the last one (:meth:`~gateway.store.shards.ShardedMap.shards`), compares their
records with what it kept, and sends the rest as it was.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from decimal import Decimal

from gateway.domain import fleet, slots
from gateway.domain.flavors import Catalog
from gateway.domain.records import Hypervisor, ResourceCapacity
from gateway.store.store import Snapshot, Store

__all__ = ["CONTENT_TYPE", "FAMILIES", "CapacityExposition", "pieces"]

#: Prometheus' text exposition format, version 0.0.4.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
PREFIX = "hypervisor_gateway_"

#: Per-host figures, in exposition order, with their HELP text.
HOST_FIGURES = {
    "physical": "Physical capacity (status.capacity); cpu in cores, memory in bytes.",
    "capacity": "Schedulable capacity: floor((physical - reserved) * overcommit ratio).",
    "reserved": "Reservation bookings (tracked hosts only).",
    "booked": "Consumer bookings (tracked hosts only).",
    "free": "Placement's view: capacity - booked (tracked hosts only; negative: over-subscribed).",
    "allocated": "What libvirt really runs (status.allocation).",
    "available": "Best known free capacity: free if bookings are tracked, else capacity - "
    "allocated; basis says which.",
}
#: Fleet totals per zone and building block: sums over the hosts that know the figure.
FLEET_FIGURES = dict(HOST_FIGURES, available="Sum of the hosts' best known free capacity.")
FLEET_COUNTS = {
    "hosts": "Hypervisors in the group.",
    "tracked_hosts": "Hypervisors whose bookings are tracked (spec.bookings present).",
    "untracked_hosts": "Hypervisors whose bookings are not tracked: free is unknown for them.",
}
FLEET_RESOURCE_COUNTS = {
    "overcommitted_hosts": "Hypervisors over-subscribed in this resource (available < 0).",
    "unknown_capacity_hosts": "Hypervisors whose capacity of this resource is unknown.",
}
FLAVOR_FIGURES = {
    "slots": "Instances of the flavor that still fit (best known figures); absent when no "
    "host of the group could be judged.",
    "hosts_with_room": "Hypervisors with room for at least one instance of the flavor.",
    "unknown_hosts": "Hypervisors that could not be judged (a figure unknown).",
}

HOST_LABELS = ("name", "zone", "building_block", "worker_group", "maintenance")
GROUP_LABELS = ("zone", "building_block")


def _families() -> dict[str, str]:
    names = {f"hypervisor_{figure}": help for figure, help in HOST_FIGURES.items()}
    names |= {f"fleet_{figure}": help for figure, help in FLEET_FIGURES.items()}
    names |= {
        f"fleet_{count}": help for count, help in (FLEET_COUNTS | FLEET_RESOURCE_COUNTS).items()
    }
    names |= {f"flavor_{figure}": help for figure, help in FLAVOR_FIGURES.items()}
    return {PREFIX + name: help for name, help in names.items()}


#: Every family this module exports (name -> HELP), all gauges, in exposition order.
FAMILIES = _families()
_HOST_FAMILIES = tuple(PREFIX + "hypervisor_" + f for f in HOST_FIGURES)
_GROUP_FAMILIES = tuple(name for name in FAMILIES if name not in _HOST_FAMILIES)
_HEADERS = {
    name: f"# HELP {name} {help}\n# TYPE {name} gauge\n".encode() for name, help in FAMILIES.items()
}


def _escape(value: str | None) -> str:
    """A label value as the text format quotes it; unknown is the empty value."""
    if not value:
        return ""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(names: Sequence[str], values: Iterable[str | None]) -> str:
    return ",".join(f'{n}="{_escape(v)}"' for n, v in zip(names, values, strict=True))


def _number(value: Decimal | int) -> str:
    """Exact digits; ``Decimal`` may write an exponent (``1E+3``), which Prometheus reads."""
    return str(value)


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class _Host:
    """One record's lines, one string per host family (empty when every figure is unknown)."""

    record: Hypervisor
    group: tuple[str, str]
    lines: tuple[bytes, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class _Group:
    """One group's lines, per family: its hosts' lines, then its own totals and slots."""

    lines: dict[str, bytes]


def _host(record: Hypervisor) -> _Host:
    labels = _labels(
        HOST_LABELS,
        (record.name, record.zone, record.building_block, record.worker_group, record.maintenance),
    )
    lines = []
    for figure, family in zip(HOST_FIGURES, _HOST_FAMILIES, strict=True):
        text = []
        for resource in record.resources.values():
            value = getattr(resource, figure)
            if value is None:
                continue
            extra = (
                f',basis="{resource.basis.value}"'
                if figure == "available" and resource.basis
                else ""
            )
            series = f'{family}{{{labels},resource="{_escape(resource.name)}"{extra}}}'
            text.append(f"{series} {_number(value)}\n")
        lines.append("".join(text).encode())
    return _Host(record, (record.zone or "", record.building_block or ""), tuple(lines))


def _group(key: tuple[str, str], hosts: list[_Host], catalog: Catalog) -> _Group:
    labels = _labels(GROUP_LABELS, key)
    members = [host.record for host in hosts]
    own: dict[str, bytes] = {
        family: b"".join([host.lines[index] for host in hosts])
        for index, family in enumerate(_HOST_FAMILIES)
    }
    lines: dict[str, list[str]] = {name: [] for name in _GROUP_FAMILIES}

    def add(name: str, value: Decimal | int | None, extra: str = "") -> None:
        if value is not None:
            lines[PREFIX + name].append(f"{PREFIX}{name}{{{labels}{extra}}} {_number(value)}\n")

    tracked = sum(1 for h in members if h.bookings_tracked)
    add("fleet_hosts", len(members))
    add("fleet_tracked_hosts", tracked)
    add("fleet_untracked_hosts", len(members) - tracked)
    (totals,) = fleet.fleet_capacity(members, fleet.Grouping.NONE)
    for resource in totals.resources.values():
        extra = f',resource="{_escape(resource.name)}"'
        for figure in FLEET_FIGURES:
            add(f"fleet_{figure}", getattr(resource, figure), extra)
        for count in FLEET_RESOURCE_COUNTS:
            add(f"fleet_{count}", getattr(resource, count), extra)
    for flavor in catalog.flavors:
        (counted,) = slots.slot_groups(
            members, flavor.resources, fleet.Grouping.NONE, flavor=flavor.name
        )
        extra = f',flavor="{_escape(flavor.name)}"'
        add("flavor_slots", counted.slots, extra)
        add("flavor_hosts_with_room", counted.hosts_with_room, extra)
        add("flavor_unknown_hosts", counted.hosts_unknown, extra)
    return _Group(own | {name: "".join(text).encode() for name, text in lines.items()})


class CapacityExposition:
    """The text of ``/metrics/capacity`` for the store's current snapshot.

    Safe to render from several threads at once (scrapes are rendered off the
    event loop): one render at a time updates what the previous one kept.
    """

    def __init__(self, store: Store, catalog: Catalog) -> None:
        self.store = store
        self.catalog = catalog
        self._lock = threading.Lock()
        self._hosts: dict[str, _Host] = {}
        self._shards: tuple[Mapping[str, Hypervisor], ...] = ()
        self._members: dict[tuple[str, str], dict[str, _Host]] = {}
        self._groups: dict[tuple[str, str], _Group] = {}
        self._chunks: tuple[Snapshot | None, tuple[bytes, ...]] = (None, ())

    def chunks(self) -> tuple[bytes, ...]:
        """The exposition of the current snapshot, in pieces (the same until it changes).

        Pieces, not one string: at 20,000 hosts the text is over 50 MB, and joining
        it anew after every change would cost more than everything else a scrape
        does; :func:`pieces` coalesces them as they are sent.
        """
        with self._lock:
            snapshot = self.store.snapshot
            rendered, chunks = self._chunks
            if rendered is not snapshot:
                self._refresh(snapshot)
                chunks = self._assemble()
                self._chunks = (snapshot, chunks)
            return chunks

    def render(self) -> bytes:
        """The exposition of the current snapshot in one piece."""
        return b"".join(self.chunks())

    def _assemble(self) -> tuple[bytes, ...]:
        groups = [self._groups[key] for key in sorted(self._groups)]
        chunks = []
        for family in FAMILIES:
            chunks.append(_HEADERS[family])
            chunks.extend([group.lines[family] for group in groups])
        return tuple(chunks)

    def _refresh(self, snapshot: Snapshot) -> None:
        """Format the hosts whose figures changed, then the groups they left or joined.

        Only the shards of the map by name that changed since the last render are
        read: after one watch event, one of them.
        """
        changed: set[tuple[str, str]] = set()
        shards = snapshot.by_name.shards()
        for shard, seen in zip(shards, self._shards or [{}] * len(shards), strict=True):
            if shard is not seen:
                self._refresh_shard(shard, seen, changed)
        self._shards = shards
        for key in changed:
            members = self._members[key]
            if members:
                hosts = [members[name] for name in sorted(members)]
                self._groups[key] = _group(key, hosts, self.catalog)
            else:
                del self._members[key], self._groups[key]

    def _refresh_shard(
        self,
        shard: Mapping[str, Hypervisor],
        seen: Mapping[str, Hypervisor],
        changed: set[tuple[str, str]],
    ) -> None:
        for name, record in shard.items():
            host = self._hosts.get(name)
            if host is None or not _same_figures(host.record, record):
                self._move(name, host, _host(record), changed)
        for name in seen.keys() - shard.keys():
            self._move(name, self._hosts[name], None, changed)

    def _move(
        self, name: str, old: _Host | None, new: _Host | None, changed: set[tuple[str, str]]
    ) -> None:
        if old is not None:
            changed.add(old.group)
            del self._members[old.group][name]
            del self._hosts[name]
        if new is not None:
            changed.add(new.group)
            self._members.setdefault(new.group, {})[name] = new
            self._hosts[name] = new


def pieces(chunks: Iterable[bytes], size: int = 2**20) -> Iterator[bytes]:
    """``chunks`` joined into pieces of about ``size`` bytes, to send one at a time."""
    pending: list[bytes] = []
    length = 0
    for chunk in chunks:
        pending.append(chunk)
        length += len(chunk)
        if length >= size:
            yield b"".join(pending)
            pending, length = [], 0
    if pending:
        yield b"".join(pending)


def _same_figures(old: Hypervisor, new: Hypervisor) -> bool:
    """Whether ``new`` exports what ``old`` did: the same labels, tracking and figures."""
    return old is new or (
        old.bookings_tracked == new.bookings_tracked
        and old.zone == new.zone
        and old.building_block == new.building_block
        and old.worker_group == new.worker_group
        and old.maintenance == new.maintenance
        and _same_inputs(old.resources, new.resources)
    )


def _same_inputs(old: Mapping[str, ResourceCapacity], new: Mapping[str, ResourceCapacity]) -> bool:
    """Whether the figures every exported one is computed from are the same.

    With tracking the same, these five decide all the others (capacity, free,
    available and its basis): comparing only them reads far fewer numbers, and
    comparing is most of a scrape after node agents rewrote every status.
    """
    if old.keys() != new.keys():
        return False
    for name, a in old.items():
        b = new[name]
        if (
            a.physical != b.physical
            or a.allocated != b.allocated
            or a.booked != b.booked
            or a.reserved != b.reserved
            or a.overcommit_ratio != b.overcommit_ratio
        ):
            return False
    return True
