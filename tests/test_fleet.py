"""Fleet totals: each figure summed over the hosts that know it (domain brief, section 4)."""

from __future__ import annotations

import gc
import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gateway.domain import fleet
from gateway.domain.ledger import Ledger
from gateway.domain.parse import parse_hypervisor
from gateway.domain.quantity import CONTEXT
from gateway.domain.records import Hypervisor
from tests.objects import consumer, hypervisor, reservation, uuid_of


def host(
    name: str,
    bookings: list[dict[str, Any]] | None = None,
    status: dict[str, Any] | None = None,
    zone: str = "a",
    overcommit: float | None = None,
) -> Hypervisor:
    spec: dict[str, Any] = {} if bookings is None else {"bookings": bookings}
    if overcommit is not None:
        spec["overcommit"] = {"cpu": overcommit}
    labels = {"topology.kubernetes.io/zone": zone}
    return parse_hypervisor(hypervisor(name, labels=labels, spec=spec, status=status))


def cpu_total(hosts: list[Hypervisor], grouping: fleet.Grouping = fleet.Grouping.NONE) -> Any:
    return [g.resources.get("cpu") for g in fleet.fleet_capacity(hosts, grouping)]


def test_a_mixed_fleet() -> None:
    tracked = host(
        "t",
        [reservation("r", {"cpu": 4}), consumer(uuid_of(1), {"cpu": 28})],
        {"capacity": {"cpu": 256}, "allocation": {"cpu": 40}},
        overcommit=2.0,
    )  # capacity 504, booked 28, free 476
    untracked = host(
        "u", None, {"capacity": {"cpu": 256}, "allocation": {"cpu": 300}}, overcommit=2
    )
    # capacity 512, unallocated 212
    (total,) = cpu_total([tracked, untracked])
    assert (total.hypervisors, total.tracked_hosts, total.untracked_hosts) == (2, 1, 1)
    assert (total.physical, total.capacity) == (512, 504 + 512)
    assert (total.reserved, total.booked, total.free) == (4, 28, 476)
    assert (total.allocated, total.available, total.used) == (340, 476 + 212, 28 + 300)
    assert total.utilization == CONTEXT.divide(Decimal(328), Decimal(1016))
    assert (total.unknown_capacity_hosts, total.overcommitted_hosts) == (0, 0)


def test_sums_no_host_knows_are_unknown() -> None:
    (total,) = cpu_total([host("u", None, {"capacity": {"cpu": 8}})])
    assert (total.reserved, total.booked, total.free) == (None, None, None)
    assert (total.allocated, total.available, total.used, total.utilization) == (None,) * 4
    assert (total.capacity, total.unknown_capacity_hosts) == (8, 0)


def test_a_tracked_host_without_the_resource_booked_none_of_it() -> None:
    hosts = [
        host("t", [], {"capacity": {"memory": "1Gi"}}),
        host("u", None, {"allocation": {"cpu": 2}}),
    ]
    (total,) = cpu_total(hosts)
    assert (total.tracked_hosts, total.booked, total.reserved) == (1, 0, 0)
    assert (total.capacity, total.free, total.unknown_capacity_hosts) == (None, None, 2)


def test_unknown_capacity_counts_every_host_of_the_group() -> None:
    hosts = [
        host("a", [], {"capacity": {"cpu": 8}}),
        host("b", [consumer(uuid_of(1), {"cpu": 2})]),  # tracked, no status
        host("c"),  # neither bookings nor status: no resource at all
    ]
    (total,) = cpu_total(hosts)
    assert (total.hypervisors, total.unknown_capacity_hosts) == (2, 2)
    assert (total.booked, total.free) == (2, 8)


def test_overcommitted_hosts_follow_the_best_known_figure() -> None:
    hosts = [
        host("t", [consumer(uuid_of(1), {"cpu": 10})], {"capacity": {"cpu": 8}}),
        host("u", None, {"capacity": {"cpu": 8}, "allocation": {"cpu": 9}}),
        host("v", None, {"capacity": {"cpu": 8}, "allocation": {"cpu": 1}}),
    ]
    (total,) = cpu_total(hosts)
    assert (total.overcommitted_hosts, total.available, total.free) == (2, -2 - 1 + 7, -2)


def test_groups() -> None:
    hosts = [host("a", [], zone="z2"), host("b", [], zone="z1"), host("c", [], zone="z1")]
    groups = fleet.group(hosts, fleet.Grouping.ZONE)
    assert [(key, [h.name for h in members]) for key, members in groups] == [
        ("z1", ["b", "c"]),
        ("z2", ["a"]),
    ]
    assert fleet.group([], fleet.Grouping.NONE) == [(None, [])]


# Property: the totals equal the per-host figures of section 4, worked out here from
# the objects' numbers with fractions, and summed by the rules.


@dataclass
class Planned:
    tracked: bool
    physical: int | None
    allocated: int | None
    ratio: Fraction
    reserved: list[int]
    booked: list[int]

    def obj(self, n: int) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "overcommit": {"cpu": str(Decimal(self.ratio.numerator) / self.ratio.denominator)}
        }
        if self.tracked:
            spec["bookings"] = [
                reservation(f"r{i}", {"cpu": a}) for i, a in enumerate(self.reserved)
            ]
            spec["bookings"] += [
                consumer(uuid_of(i), {"cpu": a}) for i, a in enumerate(self.booked)
            ]
        status: dict[str, Any] = {}
        if self.physical is not None:
            status["capacity"] = {"cpu": self.physical}
        if self.allocated is not None:
            status["allocation"] = {"cpu": self.allocated}
        return hypervisor(f"h{n:03d}", spec=spec, status=status or None)

    def figures(self) -> dict[str, Fraction | None]:
        reserved = Fraction(sum(self.reserved)) if self.tracked else None
        booked = Fraction(sum(self.booked)) if self.tracked else None
        capacity = None
        if self.physical is not None:
            capacity = Fraction(math.floor((self.physical - (reserved or 0)) * self.ratio))
        free = capacity - booked if capacity is not None and booked is not None else None
        unallocated = (
            capacity - self.allocated
            if capacity is not None and self.allocated is not None
            else None
        )
        return {
            "physical": None if self.physical is None else Fraction(self.physical),
            "reserved": reserved,
            "booked": booked,
            "capacity": capacity,
            "free": free,
            "allocated": None if self.allocated is None else Fraction(self.allocated),
            "available": free if self.tracked else unallocated,
            "used": booked
            if self.tracked
            else (None if self.allocated is None else Fraction(self.allocated)),
        }

    @property
    def has_cpu(self) -> bool:
        bookings = self.tracked and bool(self.reserved or self.booked)
        return self.physical is not None or self.allocated is not None or bookings


amounts = st.integers(0, 600)
planned = st.builds(
    Planned,
    tracked=st.booleans(),
    physical=st.none() | amounts,
    allocated=st.none() | amounts,
    ratio=st.sampled_from([Fraction(1), Fraction(3, 2), Fraction(2), Fraction(4)]),
    reserved=st.lists(st.integers(0, 16), max_size=2),
    booked=st.lists(st.integers(1, 64), max_size=4),
)


def reference_sum(values: list[Fraction | None], start: Fraction | None = None) -> Fraction | None:
    known = [v for v in values if v is not None]
    return sum(known, Fraction(0)) if known else start


@given(st.lists(planned, max_size=12))
def test_totals_equal_the_sum_of_per_host_figures(plans: list[Planned]) -> None:
    (total,) = cpu_total([parse_hypervisor(p.obj(n)) for n, p in enumerate(plans)])
    rows = [p.figures() for p in plans if p.has_cpu]
    if not rows:
        assert total is None
        return
    tracked = sum(p.tracked for p in plans)
    nothing = Fraction(0) if tracked else None
    for figure in ("physical", "capacity", "free", "allocated", "available", "used"):
        expected = reference_sum([r[figure] for r in rows])
        assert _fraction(getattr(total, figure)) == expected, figure
    for figure in ("reserved", "booked"):
        expected = reference_sum([r[figure] for r in rows], nothing)
        assert _fraction(getattr(total, figure)) == expected, figure
    assert (total.tracked_hosts, total.untracked_hosts) == (tracked, len(plans) - tracked)
    assert total.hypervisors == len(rows)
    unknown = sum(1 for p in plans if not p.has_cpu or p.figures()["capacity"] is None)
    assert total.unknown_capacity_hosts == unknown
    negative = [r for r in rows if r["available"] is not None and r["available"] < 0]
    assert total.overcommitted_hosts == len(negative)
    both = [r for r in rows if r["used"] is not None and r["capacity"] is not None]
    denominator = sum((r["capacity"] for r in both), Fraction(0))  # type: ignore[misc]
    numerator = sum((r["used"] for r in both), Fraction(0))  # type: ignore[misc]
    if not denominator:
        assert total.utilization is None
    else:
        assert total.utilization is not None
        assert abs(Fraction(total.utilization) - numerator / denominator) < Fraction(1, 10**90)


def _fraction(value: Decimal | None) -> Fraction | None:
    return None if value is None else Fraction(value)


def test_totals_of_groups_a_change_did_not_touch_are_the_same_objects() -> None:
    from gateway.sources.demo.source import generate
    from gateway.store.store import Store

    objects = generate(60, seed=4, bookings_per_host=2)  # three zones
    store = Store()
    store.replace(objects)
    tally = fleet.tally(fleet.Grouping.ZONE)
    before = fleet.fleet_groups(store.views.ledger(store.snapshot, tally), fleet.Grouping.ZONE)
    changed = dict(objects[0], metadata={**objects[0]["metadata"], "resourceVersion": "x"})
    changed["status"] = {**changed.get("status", {}), "capacity": {"cpu": "999"}}
    store.upsert(changed)
    after = fleet.fleet_groups(store.views.ledger(store.snapshot, tally), fleet.Grouping.ZONE)
    zone = store.snapshot.by_name[objects[0]["metadata"]["name"]].zone
    assert len(before) == len(after) > 1
    for old, new in zip(before, after, strict=True):
        assert (old is new) is (old.key != zone), old.key
    assert after == fleet.fleet_capacity(store.snapshot.ordered, fleet.Grouping.ZONE)


def test_totals_are_let_go_with_the_sums_they_were_made_of() -> None:
    """Nothing but a ledger keeps its groups' totals: a ledger carried through a change
    no snapshot holds any more takes them with it."""
    from gateway.domain.ledger import Ledger
    from gateway.sources.demo.source import generate

    hypervisors = [parse_hypervisor(o) for o in generate(60, seed=4, bookings_per_host=2)]
    before = _alive(fleet.FleetGroup)
    ledger = Ledger.of(fleet.tally(fleet.Grouping.ZONE), hypervisors)
    made = len(fleet.fleet_groups(ledger, fleet.Grouping.ZONE))
    assert _alive(fleet.FleetGroup) == before + made > before
    del ledger
    assert _alive(fleet.FleetGroup) == before


def _alive(kind: type) -> int:
    return sum(isinstance(o, kind) for o in gc.get_objects())


def test_the_resource_names_follow_the_hosts_that_report_them() -> None:
    gpu = host("b", status={"capacity": {"cpu": "8", "nvidia.com/gpu": "2"}})
    plain = host("a", status={"capacity": {"cpu": "8", "memory": "1Gi"}})
    names = Ledger.of(fleet.resource_tally, [plain, gpu])
    assert fleet.resource_names(names) == ["cpu", "memory", "nvidia.com/gpu"]
    assert fleet.resource_names(names.apply([gpu], [])) == ["cpu", "memory"]
    assert fleet.resource_names(names.apply([gpu, plain], [])) == []
    again = host("b", status={"capacity": {"cpu": "16", "nvidia.com/gpu": "2"}})
    assert names.apply([gpu], [again]) is names  # the same names: nothing moved
