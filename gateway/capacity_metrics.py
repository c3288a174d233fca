"""Capacity series for Prometheus, served at ``/metrics/capacity``.

The operator's dashboards read kube-state-metrics series, which copy fields but
cannot compute free capacity; the gateway does (:mod:`gateway.capacity`), so it
exports it, in three kinds of series:

- per hypervisor and resource (``hypervisor_gateway_hypervisor_<figure>``): the
  figures of :class:`~gateway.domain.ResourceCapacity`, labelled with
  ``resource`` and the host labels kube-state-metrics puts on the operator's
  Hypervisor series (``name``, ``zone``, ``building_block``, ``worker_group``,
  ``maintenance``), so that the two join in PromQL;
- per zone and building block (``hypervisor_gateway_fleet_<figure>`` and host
  counts): the fleet totals of :mod:`gateway.fleet`;
- per zone, building block and catalog flavor (``hypervisor_gateway_flavor_*``):
  instance slots (:mod:`gateway.slots`, the AVAILABLE view).

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
once per snapshot: a scrape iterates the snapshot's records once, compares,
and joins what it already has.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal

from gateway import fleet, slots
from gateway.domain import Hypervisor
from gateway.flavors import Catalog
from gateway.store import Snapshot, Store

__all__ = ["CONTENT_TYPE", "FAMILIES", "CapacityExposition"]

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
    """One group's lines for its members, one string per group family."""

    members: tuple[_Host, ...]
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


def _group(key: tuple[str, str], hosts: tuple[_Host, ...], catalog: Catalog) -> _Group:
    labels = _labels(GROUP_LABELS, key)
    members = [host.record for host in hosts]
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
    return _Group(hosts, {name: "".join(text).encode() for name, text in lines.items()})


class CapacityExposition:
    """The text of ``/metrics/capacity`` for the store's current snapshot."""

    def __init__(self, store: Store, catalog: Catalog) -> None:
        self.store = store
        self.catalog = catalog
        self._hosts: dict[str, _Host] = {}
        self._groups: dict[tuple[str, str], _Group] = {}
        self._text: tuple[Snapshot | None, bytes] = (None, b"")

    def render(self) -> bytes:
        """The exposition of the current snapshot (the same bytes until it changes)."""
        snapshot = self.store.snapshot
        rendered, text = self._text
        if rendered is not snapshot:
            text = b"".join(list(self._lines(snapshot)))
            self._text = (snapshot, text)
        return text

    def _lines(self, snapshot: Snapshot) -> Iterator[bytes]:
        hosts = self._refresh_hosts(snapshot)
        for index, family in enumerate(_HOST_FAMILIES):
            yield _HEADERS[family]
            yield from [host.lines[index] for host in hosts]
        groups = self._refresh_groups(hosts)
        for family in _GROUP_FAMILIES:
            yield _HEADERS[family]
            yield from [group.lines[family] for group in groups]

    def _refresh_hosts(self, snapshot: Snapshot) -> list[_Host]:
        """Every record's lines, formatted anew only for records not seen before."""
        previous, current = self._hosts, {}
        for name, record in snapshot.by_name.items():
            host = previous.get(name)
            if host is None or not _same_figures(host.record, record):
                host = _host(record)
            current[name] = host
        self._hosts = current
        return list(current.values())

    def _refresh_groups(self, hosts: list[_Host]) -> list[_Group]:
        """Each group's lines, computed anew only when one of its members changed."""
        members: dict[tuple[str, str], list[_Host]] = {}
        for host in hosts:
            members.setdefault(host.group, []).append(host)
        previous, current = self._groups, {}
        for key in sorted(members):
            hosts_of_group = tuple(members[key])
            group = previous.get(key)
            if group is None or group.members != hosts_of_group:
                group = _group(key, hosts_of_group, self.catalog)
            current[key] = group
        self._groups = current
        return list(current.values())


def _same_figures(old: Hypervisor, new: Hypervisor) -> bool:
    """Whether ``new`` exports what ``old`` did: the same labels, tracking and figures."""
    return old is new or (
        old.resources == new.resources
        and old.bookings_tracked == new.bookings_tracked
        and old.zone == new.zone
        and old.building_block == new.building_block
        and old.worker_group == new.worker_group
        and old.maintenance == new.maintenance
    )
