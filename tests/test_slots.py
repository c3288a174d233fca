"""Instance slots per host and per group, in each view (domain brief, sections 4 and 8)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from gateway.domain import slots
from gateway.domain.demand import Demand
from gateway.domain.fleet import Grouping
from gateway.domain.parse import parse_hypervisor
from gateway.domain.records import Basis, Hypervisor, View
from tests.objects import consumer, hypervisor, uuid_of

GiB = 2**30
#: 4 cores and 16 GiB, a g_c4_m16.
REQUEST = Demand.of_amounts({"cpu": Decimal(4), "memory": Decimal(16 * GiB)})
READY = [{"type": "Ready", "status": "True"}]


def host(
    name: str,
    bookings: list[dict[str, Any]] | None,
    status: dict[str, Any] | None,
    zone: str = "a",
    overcommit: dict[str, Any] | None = None,
) -> Hypervisor:
    spec: dict[str, Any] = {} if bookings is None else {"bookings": bookings}
    if overcommit:
        spec["overcommit"] = overcommit
    labels = {"topology.kubernetes.io/zone": zone}
    status = None if status is None else {"conditions": READY, **status}
    return parse_hypervisor(hypervisor(name, labels=labels, spec=spec, status=status))


#: free: 14 cores, 56 GiB; unallocated: 10 cores, 48 GiB
TRACKED = host(
    "tracked",
    [consumer(uuid_of(1), {"cpu": 2, "memory": "8Gi"})],
    {"capacity": {"cpu": 16, "memory": "64Gi"}, "allocation": {"cpu": 6, "memory": "16Gi"}},
)
#: unallocated: 7 cores, 112 GiB
UNTRACKED = host(
    "untracked",
    None,
    {"capacity": {"cpu": 32, "memory": "128Gi"}, "allocation": {"cpu": 25, "memory": "16Gi"}},
    zone="b",
)
#: not tracked, no allocation: nothing known beyond capacity
BLIND = host("blind", None, {"capacity": {"cpu": 32, "memory": "128Gi"}}, zone="b")


def count(h: Hypervisor, view: View = View.AVAILABLE, **request: Any) -> int | None:
    amounts = {k: Decimal(v) for k, v in request.items()}
    return slots.host_slots(h, Demand.of_amounts(amounts) if request else REQUEST, view).slots


def test_slots_are_the_smallest_quotient() -> None:
    assert count(TRACKED) == 3  # min(14 // 4, 56 // 16)
    assert count(TRACKED, cpu=1, memory=8 * GiB) == 7  # min(14, 7)
    assert count(TRACKED, cpu=4) == 3
    assert count(UNTRACKED) == 1  # min(7 // 4, 112 // 16): on libvirt's figures
    assert count(UNTRACKED, cpu=1, memory=16 * GiB) == 7


def test_slots_per_view() -> None:
    assert count(TRACKED, View.BOOKINGS) == 3
    assert count(TRACKED, View.ALLOCATION) == 2  # min(10 // 4, 48 // 16)
    assert count(UNTRACKED, View.ALLOCATION) == 1
    assert count(UNTRACKED, View.BOOKINGS) is None  # Placement knows nothing of it
    assert count(BLIND) is None
    assert count(BLIND, View.ALLOCATION) is None


def test_the_basis_is_the_hosts_own_in_available() -> None:
    assert slots.host_slots(TRACKED, REQUEST, View.AVAILABLE).basis is Basis.BOOKINGS
    assert slots.host_slots(UNTRACKED, REQUEST, View.AVAILABLE).basis is Basis.ALLOCATION
    assert slots.host_slots(TRACKED, REQUEST, View.ALLOCATION).basis is Basis.ALLOCATION
    assert slots.host_slots(BLIND, REQUEST, View.AVAILABLE).basis is None


def test_negative_figures_give_no_slots() -> None:
    over = host("over", [consumer(uuid_of(1), {"cpu": 20})], {"capacity": {"cpu": 16}})
    assert count(over, cpu=1) == 0  # free -4, not -4 slots


def test_fractional_figures_floor() -> None:
    h = host("h", [consumer(uuid_of(1), {"cpu": "0.5"})], {"capacity": {"cpu": 8}})
    assert count(h, cpu=2) == 3  # 7.5 // 2


def test_a_request_beyond_max_unit_never_fits() -> None:
    h = host("h", [], {"capacity": {"cpu": 16}}, overcommit={"cpu": 4})  # free 64
    assert count(h, cpu=16) == 4
    assert count(h, cpu=17) == 0  # larger than the physical total
    assert count(h, cpu="0.5") == 0  # below min_unit


def test_a_resource_the_host_does_not_have_is_unknown() -> None:
    assert count(TRACKED, cpu=1, VGPU=1) is None


def test_a_figure_that_admits_none_makes_zero_whatever_the_unknown_ones() -> None:
    over = host("over", [consumer(uuid_of(1), {"memory": "2Gi"})], {"capacity": {"memory": "1Gi"}})
    assert count(over, cpu=1, memory=2**20) == 0  # memory -1 GiB; cpu unknown
    assert count(TRACKED, cpu=15, VGPU=1) == 0  # 14 cores free; VGPU unknown
    (group,) = slots.slot_groups([over], Demand.of_amounts({"cpu": Decimal(1)}), Grouping.NONE)
    assert (group.slots, group.hosts_unknown) == (None, 1)  # cpu alone: unknown


def test_groups_sum_and_count() -> None:
    groups = slots.slot_groups([TRACKED, UNTRACKED, BLIND], REQUEST, Grouping.NONE)
    (group,) = groups
    assert (group.slots, group.allocation_slots) == (4, 1)
    assert (group.hosts_with_room, group.hosts_unknown, len(group.hosts)) == (2, 1, 3)
    zones = slots.slot_groups([TRACKED, UNTRACKED, BLIND], REQUEST, Grouping.ZONE, View.BOOKINGS)
    assert [(g.key, g.slots, g.hosts_with_room, g.hosts_unknown) for g in zones] == [
        ("a", 3, 1, 0),
        ("b", None, 0, 2),  # no host could be judged: unknown, not 0
    ]
    assert zones[0].allocation_slots is None
    assert [h.hypervisor.name for h in zones[1].hosts] == ["untracked", "blind"]


def test_a_full_group_has_zero_slots_not_unknown() -> None:
    full = host("full", [consumer(uuid_of(1), {"cpu": 16})], {"capacity": {"cpu": 16}})
    (group,) = slots.slot_groups([full], Demand.of_amounts({"cpu": Decimal(1)}), Grouping.NONE)
    assert (group.slots, group.hosts_with_room, group.hosts_unknown) == (0, 0, 0)


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({}, "at least one resource"),
        ({"cpu": Decimal(-1)}, "cpu must not be negative"),
    ],
)
def test_bad_requests(request_: dict[str, Decimal], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        slots.slot_groups([TRACKED], Demand.of_amounts(request_), Grouping.NONE)


def test_an_amount_below_min_unit_gives_no_slots() -> None:
    """0 cores, or half a MiB, is below Placement's min_unit: it fits nowhere."""
    for request_ in ({"cpu": Decimal(0)}, {"memory": Decimal(2**19)}):
        (group,) = slots.slot_groups([TRACKED], Demand.of_amounts(request_), Grouping.NONE)
        assert (group.slots, group.hosts_with_room) == (0, 0)


def test_memory_judged_on_bookings_is_counted_in_placement_mib() -> None:
    """Placement's MEMORY_MB total is the physical bytes truncated to MiB, and the ratio
    applies to that: 1024.9 MiB x 4 is 4096 MiB to Placement, 4099.6 MiB in bytes. A
    241 MiB request fits 16 times in Placement's figure, 17 times in the bytes."""
    physical = 1_074_685_542  # 1024.9 MiB
    status = {"capacity": {"memory": physical}, "allocation": {"memory": 0}}
    tracked = host("t", [], status, overcommit={"memory": 4})
    untracked = host("u", None, status, overcommit={"memory": 4})
    request = {"memory": 241 * 2**20}
    assert count(tracked, View.BOOKINGS, **request) == 16
    assert count(tracked, View.AVAILABLE, **request) == 16  # judged on its bookings
    assert count(tracked, View.ALLOCATION, **request) == 17  # libvirt's view, in bytes
    assert count(untracked, View.AVAILABLE, **request) == 17


def test_a_ratio_is_applied_on_bookings_as_placement_applies_it() -> None:
    """Placement multiplies in binary floats: 100 x 1.15 = 114.99999999999999 -> 114
    vCPUs. The capacity figure stays exact (115); the room Placement grants is 114."""
    status = {"capacity": {"cpu": 100}, "allocation": {"cpu": 0}}
    tracked = host("t", [consumer(uuid_of(1), {"cpu": 113})], status, overcommit={"cpu": 1.15})
    assert tracked.resources["cpu"].capacity == 115
    assert count(tracked, View.BOOKINGS, cpu=1) == 1  # 114 - 113
    assert count(tracked, View.ALLOCATION, cpu=1) == 115  # libvirt's view, exact: 115 - 0
