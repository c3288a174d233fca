"""Free capacity with Placement semantics: the exact figures of domain brief sections 4 and 6."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.domain import capacity
from gateway.domain.parse import parse_hypervisor
from gateway.domain.records import Basis, Hypervisor, ResourceCapacity, View
from tests.objects import consumer, hypervisor, reservation, uuid_of

GiB = 2**30
MiB = 2**20


def parsed(
    bookings: list[dict[str, Any]] | None = None,
    *,
    status: dict[str, Any] | None = None,
    overcommit: dict[str, Any] | None = None,
) -> Hypervisor:
    spec: dict[str, Any] = {}
    if bookings is not None:
        spec["bookings"] = bookings
    if overcommit is not None:
        spec["overcommit"] = overcommit
    return parse_hypervisor(hypervisor(spec=spec, status=status))


def cpu_host(physical: Any, ratio: Any, reserved: Any, *booked: Any) -> ResourceCapacity:
    """A host with only cpu: one reservation and one consumer per booked amount."""
    bookings = [reservation("host", {"cpu": reserved})]
    bookings += [consumer(uuid_of(i), {"cpu": amount}) for i, amount in enumerate(booked)]
    host = parsed(bookings, status={"capacity": {"cpu": physical}}, overcommit={"cpu": ratio})
    return host.resources["cpu"]


def test_the_domain_example() -> None:
    cpu = cpu_host(256, 2.0, 4, 16, 8, 4)
    assert cpu.physical == 256
    assert cpu.overcommit_ratio == 2
    assert cpu.reserved == 4
    assert cpu.capacity == 504  # floor((256 - 4) * 2)
    assert cpu.booked == 28
    assert cpu.free == 476
    assert cpu.overcommitted is False
    assert cpu.utilization is not None
    assert abs(Fraction(cpu.utilization) - Fraction(28, 504)) < Fraction(1, 10**90)


def test_the_domain_example_is_on_the_bookings_basis() -> None:
    cpu = cpu_host(256, 2.0, 4, 16, 8, 4)
    assert (cpu.available, cpu.basis, cpu.used) == (476, Basis.BOOKINGS, 28)


def test_the_domain_example_without_bookings() -> None:
    host = parsed(
        status={"capacity": {"cpu": 256}, "allocation": {"cpu": 300}}, overcommit={"cpu": 2.0}
    )
    cpu = host.resources["cpu"]
    assert not host.bookings_tracked
    assert cpu.capacity == 512  # floor(256 * 2): reservations unknown
    assert (cpu.reserved, cpu.booked, cpu.free) == (None, None, None)
    assert cpu.allocated == 300
    assert cpu.unallocated == 212
    assert (cpu.available, cpu.basis, cpu.used) == (212, Basis.ALLOCATION, 300)
    assert cpu.utilization == Decimal(300) / Decimal(512)
    assert cpu.overcommitted is False
    assert host.overcommitted is False


def test_untracked_over_its_capacity_is_flagged() -> None:
    host = parsed(status={"capacity": {"cpu": 64}, "allocation": {"cpu": "70.5"}})
    cpu = host.resources["cpu"]
    assert (cpu.available, cpu.overcommitted, host.overcommitted) == (Decimal("-6.5"), True, True)


def test_untracked_without_allocation_knows_only_its_capacity() -> None:
    host = parsed(status={"capacity": {"cpu": 8, "memory": "16Gi"}}, overcommit={"cpu": 1.5})
    cpu = host.resources["cpu"]
    assert cpu.capacity == 12
    assert (cpu.free, cpu.unallocated, cpu.available, cpu.basis, cpu.used) == (None,) * 5
    assert (cpu.utilization, cpu.overcommitted, host.overcommitted) == (None, None, None)


def test_untracked_with_a_partial_allocation() -> None:
    host = parsed(status={"capacity": {"cpu": 8, "memory": "16Gi"}, "allocation": {"cpu": 2}})
    assert host.resources["cpu"].available == 6
    assert host.resources["memory"].available is None
    assert host.overcommitted is None  # memory cannot be judged: not "not overcommitted"


def test_tracked_figures_ignore_the_allocation() -> None:
    host = parsed(
        [consumer(uuid_of(1), {"cpu": 2})],
        status={"capacity": {"cpu": 8}, "allocation": {"cpu": 7}},
    )
    cpu = host.resources["cpu"]
    assert (cpu.free, cpu.unallocated) == (6, 1)
    assert (cpu.available, cpu.basis, cpu.used) == (6, Basis.BOOKINGS, 2)


@pytest.mark.parametrize(
    ("view", "tracked", "untracked"),
    [(View.AVAILABLE, 6, 5), (View.BOOKINGS, 6, None), (View.ALLOCATION, 1, 5)],
)
def test_figure_per_view(view: View, tracked: int, untracked: int | None) -> None:
    status = {"capacity": {"cpu": 8}, "allocation": {"cpu": 7}}
    host = parsed([consumer(uuid_of(1), {"cpu": 2})], status=status)
    assert host.resources["cpu"].figure(view) == tracked
    status = {"capacity": {"cpu": 8}, "allocation": {"cpu": 3}}
    assert parsed(status=status).resources["cpu"].figure(view) == untracked


def test_overcommitted_per_view() -> None:
    # free 8 - 10 = -2 (Placement over-booked), unallocated 8 - 3 = 5
    status = {"capacity": {"cpu": 8}, "allocation": {"cpu": 3}}
    host = parsed([consumer(uuid_of(1), {"cpu": 10})], status=status)
    assert host.overcommitted_in(View.AVAILABLE) is True
    assert host.overcommitted_in(View.BOOKINGS) is True
    assert host.overcommitted_in(View.ALLOCATION) is False
    untracked = parsed(status=status)
    assert untracked.overcommitted_in(View.BOOKINGS) is None
    assert untracked.overcommitted_in(View.ALLOCATION) is False


def test_a_key_without_capacity_does_not_make_a_host_unknown() -> None:
    host = parsed([consumer(uuid_of(1), {"DISK_GB": 40})], status={"capacity": {"cpu": 8}})
    assert host.overcommitted is False  # DISK_GB cannot be judged; cpu can


def test_ratio_applies_after_the_reservation() -> None:
    host = parsed(
        [reservation("host", {"cpu": 4}), consumer(uuid_of(1), {"cpu": 28})],
        status={"capacity": {"cpu": 256}, "effectiveCapacity": {"cpu": 512}},
        overcommit={"cpu": 2.0},
    )
    cpu = host.resources["cpu"]
    assert cpu.free == 476
    assert cpu.free != cpu.effective_capacity - cpu.reserved - cpu.booked  # 480, the wrong way


@pytest.mark.parametrize(
    ("physical", "ratio", "reserved", "expected"),
    [
        (7, 1.5, 0, 10),  # 10.5
        (7, "1.5", 0, 10),
        (1001, 1.5, 0, 1501),  # 1501.5
        ("1500m", 1, 0, 1),  # 1.5 cores
        ("1500m", 3, 0, 4),  # 4.5
        ("2500m", 1.5, "500m", 3),  # 3.0 exactly
        (10, 1.1, 1, 9),  # 9.9: no float 9.900000000000000355
        (2, 1.5, 3, -2),  # -1.5 floors down, not towards zero
        (3, 1.3333333333, 0, 3),  # 3.9999999999
        (10**29 + 1, 1, 0, 10**29 + 1),  # beyond the 28 digits of the default context
        ("100000000000000000000000000001.5", 2, "0.5", 2 * 10**29 + 2),
    ],
)
def test_capacity_is_floored_in_base_units(
    physical: Any, ratio: Any, reserved: Any, expected: int
) -> None:
    cpu = cpu_host(physical, ratio, reserved)
    assert cpu.capacity == expected
    assert cpu.free == expected


NANOS = st.integers(0, 10**21).map(lambda n: Fraction(n, 10**9))  # up to 10**12, 9 decimals


@given(
    physical=NANOS,
    ratio=st.integers(10**6, 64 * 10**6).map(lambda n: Fraction(n, 10**6)),
    reserved=NANOS,
    booked=st.lists(NANOS, max_size=5),
)
def test_capacity_matches_fraction_arithmetic(
    physical: Fraction, ratio: Fraction, reserved: Fraction, booked: list[Fraction]
) -> None:
    cpu = cpu_host(_plain(physical), _plain(ratio), _plain(reserved), *map(_plain, booked))
    expected = math.floor((physical - reserved) * ratio)
    assert cpu.capacity == expected
    assert cpu.booked == sum(booked)
    assert cpu.free == expected - sum(booked)
    assert cpu.overcommitted is (expected < sum(booked))


def _plain(value: Fraction) -> str:
    """A fraction whose denominator divides 10**9, as a plain decimal string."""
    nanos = value * 10**9
    assert nanos.denominator == 1
    digits = str(abs(nanos.numerator)).rjust(10, "0")
    return f"{'-' if nanos < 0 else ''}{digits[:-9]}.{digits[-9:]}"


def test_negative_free_is_reported_and_flagged() -> None:
    host = parsed(
        [consumer(uuid_of(1), {"cpu": 6}), consumer(uuid_of(2), {"cpu": 4})],
        status={"capacity": {"cpu": 8, "memory": "1Gi"}},
    )
    cpu = host.resources["cpu"]
    assert (cpu.capacity, cpu.booked, cpu.free) == (8, 10, -2)
    assert cpu.overcommitted is True
    assert host.resources["memory"].overcommitted is False
    assert host.overcommitted is True


def test_exactly_full_is_not_overcommitted() -> None:
    host = parsed([consumer(uuid_of(1), {"cpu": 8})], status={"capacity": {"cpu": 8}})
    assert host.resources["cpu"].free == 0
    assert host.resources["cpu"].overcommitted is False
    assert host.overcommitted is False


def test_no_status_means_unknown_never_zero() -> None:
    host = parsed([reservation("host", {"cpu": 1}), consumer(uuid_of(1), {"cpu": 4})])
    cpu = host.resources["cpu"]
    assert cpu.physical is None
    assert cpu.capacity is None
    assert cpu.free is None
    assert cpu.unallocated is None
    assert cpu.utilization is None
    assert cpu.overcommitted is None
    assert (cpu.booked, cpu.reserved) == (4, 1)
    assert (cpu.available, cpu.basis, cpu.used) == (None, None, 4)
    assert host.overcommitted is None  # not known, so not "not overcommitted"


def test_a_key_status_never_carries_is_unknown() -> None:
    host = parsed(
        [reservation("host", {"DISK_GB": 10}), consumer(uuid_of(1), {"DISK_GB": 40, "cpu": 2})],
        status={"capacity": {"cpu": 8, "memory": "16Gi"}},
    )
    disk = host.resources["DISK_GB"]
    assert (disk.physical, disk.capacity, disk.free) == (None, None, None)
    assert (disk.booked, disk.reserved) == (40, 10)
    assert host.resources["cpu"].free == 6


def test_disk_and_disk_gb_are_never_merged() -> None:
    host = parsed(
        [consumer(uuid_of(1), {"DISK_GB": 10, "disk": "1Gi"})],
        status={"capacity": {"disk": "100Gi"}},
    )
    assert host.resources["disk"].booked == GiB
    assert host.resources["disk"].free == 99 * GiB
    assert host.resources["DISK_GB"].booked == 10
    assert host.resources["DISK_GB"].free is None


def test_memory_stays_in_bytes() -> None:
    host = parsed(
        [reservation("host", {"memory": "512Mi"}), consumer(uuid_of(1), {"memory": "1G"})],
        status={"capacity": {"memory": "4227289164Ki"}, "allocation": {"memory": "2Gi"}},
    )
    memory = host.resources["memory"]
    assert memory.physical == 4227289164 * 1024
    assert memory.reserved == 512 * MiB
    assert memory.booked == 10**9
    assert memory.capacity == 4227289164 * 1024 - 512 * MiB
    assert memory.free == 4227289164 * 1024 - 512 * MiB - 10**9
    assert memory.allocated == 2 * GiB
    assert memory.unallocated == 4227289164 * 1024 - 512 * MiB - 2 * GiB


def test_resources_cover_capacity_bookings_and_allocation_keys() -> None:
    host = parsed(
        [reservation("r", {"PCPU": 2}), consumer(uuid_of(1), {"VGPU": 1})],
        status={
            "capacity": {"cpu": 8},
            "allocation": {"CUSTOM_X": 3},
            "effectiveCapacity": {"cpu": 16, "only_effective": 1},
        },
    )
    assert list(host.resources) == ["CUSTOM_X", "PCPU", "VGPU", "cpu"]
    custom = host.resources["CUSTOM_X"]
    assert (custom.allocated, custom.booked, custom.capacity) == (3, 0, None)


def test_effective_capacity_is_read_as_reported() -> None:
    host = parsed(
        status={"capacity": {"cpu": 8}, "effectiveCapacity": {"cpu": 999}},
        overcommit={"cpu": 2},
    )
    assert host.resources["cpu"].effective_capacity == 999
    assert host.resources["cpu"].capacity == 16
    assert parsed(status={"capacity": {"cpu": 8}}).resources["cpu"].effective_capacity is None


def test_utilization() -> None:
    assert cpu_host(10, 1, 0, 2.5).utilization == Decimal("0.25")
    assert cpu_host(1, 1, 1, 2).utilization is None  # capacity 0
    assert cpu_host(1, 1, 2, 2).utilization == -2  # capacity -1: reported, not hidden


# The Placement view.


def placement_host() -> Hypervisor:
    return parsed(
        [
            reservation("host", {"cpu": 2, "memory": "1536Ki", "DISK_GB": 100}),
            consumer(uuid_of(1), {"cpu": 4, "memory": "4Gi", "DISK_GB": 20}),
            consumer(uuid_of(2), {"cpu": 1, "memory": "1000Ki", "VGPU": 1}),
        ],
        status={"capacity": {"cpu": 64, "memory": 1001 * MiB + 1000, "DISK_GB": 1000}},
        overcommit={"cpu": 4, "memory": 1.5},
    )


def test_placement_inventories() -> None:
    inventories = {i.resource_class: i for i in capacity.placement_inventories(placement_host())}
    assert sorted(inventories) == ["DISK_GB", "MEMORY_MB", "VCPU"]  # VGPU: no known total
    vcpu, memory, disk = inventories["VCPU"], inventories["MEMORY_MB"], inventories["DISK_GB"]
    assert (vcpu.total, vcpu.reserved, vcpu.max_unit, vcpu.allocation_ratio) == (64, 2, 64, 4)
    assert (vcpu.min_unit, vcpu.step_size, vcpu.used) == (1, 1, 5)
    assert (vcpu.capacity, vcpu.free) == (248, 243)
    # bytes / 2**20, truncated: 1001 MiB + 1000 bytes -> 1001; 1.5 MiB -> 1; 1000 KiB -> 0
    assert (memory.total, memory.reserved, memory.max_unit) == (1001, 1, 1001)
    assert memory.used == 4096 + 0
    assert memory.allocation_ratio == Decimal("1.5")
    assert memory.capacity == 1500  # floor((1001 - 1) * 1.5), in MiB
    assert memory.free == 1500 - 4096
    assert (disk.total, disk.reserved, disk.used, disk.capacity) == (1000, 100, 20, 900)


def test_placement_capacity_floors_in_placement_units() -> None:
    host = parsed(status={"capacity": {"memory": 1001 * MiB}}, overcommit={"memory": 1.5})
    (memory,) = capacity.placement_inventories(host)
    assert memory.capacity == 1501  # floor(1001 * 1.5) MiB
    assert host.resources["memory"].capacity == 1501 * MiB + MiB // 2  # bytes: 1501.5 MiB


BYTES = st.integers(-(10**15), 10**15).map(lambda n: Fraction(n, 10**3))  # signed, 3 decimals


@given(
    physical=BYTES,
    reserved=BYTES,
    booked=BYTES,
    ratio=st.sampled_from(["1", "1.0", "1.15", "0.5", "4", "3.333333333"]),
)
def test_placement_room_for_memory_is_its_own_arithmetic(
    physical: Fraction, reserved: Fraction, booked: Fraction, ratio: str
) -> None:
    """In whole MiB truncated toward zero, the ratio applied in binary floating point;
    judged by Placement's figures, whatever the bytes (fractions and negative ones too)."""
    memory = capacity.compute_resources(
        tracked=True,
        physical={"memory": Decimal(_plain(physical))},
        overcommit={"memory": Decimal(ratio)},
        reserved={"memory": Decimal(_plain(reserved))},
        booked={"memory": Decimal(_plain(booked))},
        allocated={},
        effective={},
    )["memory"]
    total, held, used = (math.trunc(v / MiB) for v in (physical, reserved, booked))
    room = total - held if Decimal(ratio) == 1 else int(float(total - held) * float(ratio))
    free, maximum = capacity.judged(View.BOOKINGS)(memory, True)
    assert (free, maximum) == ((room - used) * MiB, total * MiB)
    assert str(free) == str((room - used) * MiB)  # whole bytes, never -0 or an exponent


def test_placement_usages() -> None:
    usages = capacity.placement_usages(placement_host())
    assert usages == {"DISK_GB": 20, "MEMORY_MB": 4096, "VCPU": 5, "VGPU": 1}
    assert capacity.placement_usages(parsed([], status={"capacity": {"cpu": 8}})) == {"VCPU": 0}


def test_placement_view_of_an_untracked_host() -> None:
    host = parsed(
        status={"capacity": {"cpu": 64, "memory": 1001 * MiB}, "allocation": {"cpu": 10}},
        overcommit={"cpu": 4},
    )
    vcpu, memory = capacity.placement_inventories(host)
    assert (vcpu.total, vcpu.reserved, vcpu.used, vcpu.capacity, vcpu.free) == (
        64,
        None,
        None,
        256,
        None,
    )
    assert (memory.total, memory.reserved, memory.used, memory.capacity) == (1001, None, None, 1001)
    assert capacity.placement_usages(host) is None  # unknown, never {} or zeros


def test_resource_class() -> None:
    assert capacity.resource_class("cpu") == "VCPU"
    assert capacity.resource_class("memory") == "MEMORY_MB"
    assert capacity.resource_class("DISK_GB") == "DISK_GB"
    assert capacity.resource_class("disk") == "disk"


# fits: min_unit <= amount <= max_unit (the physical total) and amount <= free;
# unknown never fits.


def fits(host: Hypervisor, **request: Any) -> bool:
    return capacity.fits(host, {name: Decimal(str(amount)) for name, amount in request.items()})


def test_fits_up_to_free() -> None:
    host = parsed(
        [consumer(uuid_of(1), {"cpu": 52})], status={"capacity": {"cpu": 16}}, overcommit={"cpu": 4}
    )  # capacity 64, free 12, max_unit 16
    assert fits(host, cpu=12)
    assert fits(host, cpu=1)
    assert not fits(host, cpu="12.000000001")


def test_fits_never_below_min_unit() -> None:
    host = parsed([], status={"capacity": {"cpu": 8, "memory": "16Gi", "DISK_GB": 100}})
    assert not fits(host, cpu="0.5")  # less than one VCPU
    assert fits(host, memory=2**20) and not fits(host, memory=2**20 - 1)  # one MiB
    assert fits(host, DISK_GB=1) and not fits(host, DISK_GB="0.5")


def test_fits_never_beyond_max_unit() -> None:
    host = parsed([], status={"capacity": {"cpu": 8}}, overcommit={"cpu": 4})  # free 32
    assert fits(host, cpu=8)
    assert not fits(host, cpu=9)


def test_fits_every_resource_of_the_request() -> None:
    host = parsed([], status={"capacity": {"cpu": 8, "memory": "16Gi"}})
    assert fits(host, cpu=8, memory=16 * GiB)
    assert not fits(host, cpu=8, memory=16 * GiB + 1)
    assert fits(host)  # an empty request fits anywhere


def test_unknown_never_fits() -> None:
    assert not fits(parsed(), cpu=1)
    assert not fits(parsed([consumer(uuid_of(1), {"DISK_GB": 1})]), DISK_GB=1)
    host = parsed(status={"capacity": {"cpu": 8}})
    assert not fits(host, DISK_GB=1)  # a resource the host does not have at all


def fits_in(host: Hypervisor, view: View, **request: Any) -> bool:
    amounts = {name: Decimal(str(amount)) for name, amount in request.items()}
    return capacity.fits(host, amounts, view)


def test_fits_per_view() -> None:
    # tracked: free 16 - 10 = 6, unallocated 16 - 12 = 4
    status = {"capacity": {"cpu": 16}, "allocation": {"cpu": 12}}
    tracked = parsed([consumer(uuid_of(1), {"cpu": 10})], status=status)
    assert fits(tracked, cpu=6) and fits_in(tracked, View.AVAILABLE, cpu=6)
    assert fits_in(tracked, View.BOOKINGS, cpu=6) and not fits_in(tracked, View.BOOKINGS, cpu=7)
    assert fits_in(tracked, View.ALLOCATION, cpu=4)
    assert not fits_in(tracked, View.ALLOCATION, cpu=5)
    # untracked: unallocated 4, free unknown
    untracked = parsed(status=status)
    assert fits(untracked, cpu=4) and not fits(untracked, cpu=5)
    assert fits_in(untracked, View.ALLOCATION, cpu=4)
    assert not fits_in(untracked, View.BOOKINGS, cpu=1)  # never, in Placement's view


def test_untracked_fits_within_min_and_max_unit() -> None:
    host = parsed(status={"capacity": {"cpu": 8}, "allocation": {"cpu": 0}}, overcommit={"cpu": 4})
    assert fits(host, cpu=8) and not fits(host, cpu=9)  # max_unit 8 though 32 unallocated
    assert not fits(host, cpu="0.5")


def test_untracked_without_allocation_never_fits() -> None:
    host = parsed(status={"capacity": {"cpu": 8}})
    for view in View:
        assert not fits_in(host, view, cpu=1)


def test_over_subscribed_host_fits_nothing() -> None:
    host = parsed([consumer(uuid_of(1), {"cpu": 10})], status={"capacity": {"cpu": 8}})
    assert not fits(host, cpu=1)
