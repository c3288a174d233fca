"""The text of the capacity series: one host's lines, one group's lines.

The operator's dashboards read kube-state-metrics series, which copy fields but
cannot compute free capacity; the gateway does (:mod:`gateway.domain.capacity`), so it
exports it, in four kinds of series:

- per hypervisor and resource (``hypervisor_gateway_hypervisor_<figure>``): the
  figures of :class:`~gateway.domain.records.ResourceCapacity`, labelled with
  ``resource`` and the host labels kube-state-metrics puts on the operator's
  Hypervisor series that stay with a host (``name``, ``zone``, ``building_block``,
  ``worker_group``), so that the two join in PromQL;
- per hypervisor, info series worth 1 (``..._hypervisor_info``,
  ``..._hypervisor_basis_info``) that carry what changes over a host's life: its
  ``maintenance``, and per resource the ``basis`` of ``available``. On the figures
  they would start a new series at every change (a graph broken in two, an alert
  whose ``for`` starts again); a query joins them where it wants them
  (``* on (name) group_left (maintenance)``), one replica's (``topk``: for a
  scrape after a change, the replicas may disagree);
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
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal

from gateway.domain import fleet, slots
from gateway.domain.flavors import Catalog
from gateway.domain.ledger import Ledger
from gateway.domain.records import Hypervisor, ResourceCapacity, View

__all__ = [
    "CONTENT_TYPE",
    "FAMILIES",
    "HEADERS",
    "GroupLines",
    "GroupSums",
    "HostLines",
    "group_lines",
    "host_lines",
    "same_figures",
]

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
    "allocated; hypervisor_gateway_hypervisor_basis_info says which.",
}
#: Per-host info series, worth 1, with their HELP text: the labels that change.
HOST_INFO = {
    "info": "1 per hypervisor, labelled with its maintenance (and the host labels): "
    "join one replica's: * on (name) group_left (maintenance) "
    f"topk by (name) (1, {PREFIX}hypervisor_info).",
    "basis_info": "1 per hypervisor and resource whose available figure is known, "
    "labelled with its basis (BOOKINGS: free; ALLOCATION: capacity - allocated): "
    "join one replica's: * on (name, resource) group_left (basis) "
    f"topk by (name, resource) (1, {PREFIX}hypervisor_basis_info).",
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

HOST_LABELS = ("name", "zone", "building_block", "worker_group")
INFO_LABELS = (*HOST_LABELS, "maintenance")
GROUP_LABELS = ("zone", "building_block")


def _families() -> dict[str, str]:
    names = {f"hypervisor_{figure}": help for figure, help in (HOST_FIGURES | HOST_INFO).items()}
    names |= {f"fleet_{figure}": help for figure, help in FLEET_FIGURES.items()}
    names |= {
        f"fleet_{count}": help for count, help in (FLEET_COUNTS | FLEET_RESOURCE_COUNTS).items()
    }
    names |= {f"flavor_{figure}": help for figure, help in FLAVOR_FIGURES.items()}
    return {PREFIX + name: help for name, help in names.items()}


#: Every family this module exports (name -> HELP), all gauges, in exposition order.
FAMILIES = _families()
FIGURE_FAMILIES = tuple(PREFIX + "hypervisor_" + f for f in HOST_FIGURES)
INFO_FAMILY, BASIS_FAMILY = (PREFIX + "hypervisor_" + f for f in HOST_INFO)
HOST_FAMILIES = (*FIGURE_FAMILIES, INFO_FAMILY, BASIS_FAMILY)
GROUP_FAMILIES = tuple(name for name in FAMILIES if name not in HOST_FAMILIES)
HEADERS = {
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
    """Exact digits; ``Decimal`` may write an exponent (``1E+3``), which Prometheus reads.

    Zero is ``0``: a sum that lost its last term by subtraction is ``-0`` under the
    quantities' rounding (toward floor), which would read as a change of sign.
    """
    return "0" if value == 0 else str(value)


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class HostLines:
    """One record's lines, one string per host family (empty when it knows none of its figures)."""

    record: Hypervisor
    group: tuple[str, str]
    lines: tuple[bytes, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class GroupLines:
    """One group's lines, per family: its hosts' lines, then its own totals and slots.

    The hosts' lines are theirs, not a copy joined per group: a copy doubled the
    memory the series take (2 KiB a host at 5,000 hosts), and the pieces are joined
    as they are sent anyway (:func:`gateway.http.capacity_metrics.pieces`).
    """

    lines: dict[str, tuple[bytes, ...]]


def host_lines(record: Hypervisor) -> HostLines:
    """One host's lines: its figures, then its info series."""
    host = (record.name, record.zone, record.building_block, record.worker_group)
    labels = _labels(HOST_LABELS, host)
    resources = [
        (resource, f'{labels},resource="{_escape(resource.name)}"')
        for resource in record.resources.values()
    ]
    lines = [
        "".join(
            f"{family}{{{series}}} {_number(value)}\n"
            for resource, series in resources
            if (value := getattr(resource, figure)) is not None
        )
        for figure, family in zip(HOST_FIGURES, FIGURE_FAMILIES, strict=True)
    ]
    lines.append(f"{INFO_FAMILY}{{{_labels(INFO_LABELS, (*host, record.maintenance))}}} 1\n")
    lines.append(
        "".join(
            f'{BASIS_FAMILY}{{{series},basis="{resource.basis.value}"}} 1\n'
            for resource, series in resources
            if resource.basis
        )
    )
    group = (record.zone or "", record.building_block or "")
    return HostLines(record, group, tuple(line.encode() for line in lines))


@dataclasses.dataclass(frozen=True, slots=True)
class GroupSums:
    """A group's totals and slots as ledgers (:mod:`gateway.domain.ledger`): a change
    of one host costs that host's figures, not a count of every member's."""

    totals: Ledger
    slots: Ledger

    @classmethod
    def of(cls, catalog: Catalog, records: Iterable[Hypervisor]) -> GroupSums:
        members = list(records)
        requests = [(flavor.name, flavor.demand) for flavor in catalog.flavors]
        tally = slots.SlotTally.of(requests, View.AVAILABLE, fleet.Grouping.NONE)
        return cls(Ledger.of(fleet.tally(fleet.Grouping.NONE), members), Ledger.of(tally, members))

    def apply(self, removed: list[Hypervisor], added: list[Hypervisor]) -> GroupSums:
        """These sums without ``removed`` (each one counted here) and with ``added``."""
        return GroupSums(self.totals.apply(removed, added), self.slots.apply(removed, added))


def group_lines(
    key: tuple[str, str], hosts: list[HostLines], sums: GroupSums, catalog: Catalog
) -> GroupLines:
    """A group's lines: its hosts' (in the order given), then its totals and slots."""
    labels = _labels(GROUP_LABELS, key)
    own: dict[str, tuple[bytes, ...]] = {
        family: tuple(host.lines[index] for host in hosts if host.lines[index])
        for index, family in enumerate(HOST_FAMILIES)
    }
    lines: dict[str, list[str]] = {name: [] for name in GROUP_FAMILIES}

    def add(name: str, value: Decimal | int | None, extra: str = "") -> None:
        if value is not None:
            lines[PREFIX + name].append(f"{PREFIX}{name}{{{labels}{extra}}} {_number(value)}\n")

    (totals,) = fleet.fleet_groups(sums.totals, fleet.Grouping.NONE)
    add("fleet_hosts", totals.hypervisor_count)
    add("fleet_tracked_hosts", totals.tracked_hosts)
    add("fleet_untracked_hosts", totals.untracked_hosts)
    for resource in totals.resources.values():
        extra = f',resource="{_escape(resource.name)}"'
        for figure in FLEET_FIGURES:
            add(f"fleet_{figure}", getattr(resource, figure), extra)
        for count in FLEET_RESOURCE_COUNTS:
            add(f"fleet_{count}", getattr(resource, count), extra)
    members = [host.record for host in hosts]
    for flavor in catalog.flavors:
        (counted,) = slots.read_groups(sums.slots, flavor.name, lambda key: members)
        extra = f',flavor="{_escape(flavor.name)}"'
        add("flavor_slots", counted.slots, extra)
        add("flavor_hosts_with_room", counted.hosts_with_room, extra)
        add("flavor_unknown_hosts", counted.hosts_unknown, extra)
    return GroupLines(own | {name: ("".join(text).encode(),) for name, text in lines.items()})


def same_figures(old: Hypervisor, new: Hypervisor) -> bool:
    """Whether ``new`` exports what ``old`` did: the same labels, tracking and figures,
    and the same part of its group's slots: what the scheduler judges (readiness,
    eviction, projects, traits, aggregates) moves no figure of the host but decides
    whether its room counts."""
    return old is new or (
        old.bookings_tracked == new.bookings_tracked
        and old.zone == new.zone
        and old.building_block == new.building_block
        and old.worker_group == new.worker_group
        and old.maintenance == new.maintenance
        and _same_inputs(old.resources, new.resources)
        and old.ready == new.ready
        and old.evicted == new.evicted
        and old.allowed_projects == new.allowed_projects
        and old.traits == new.traits
        and old.aggregates == new.aggregates
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
