"""Ledgers: sums carried forward per change equal the sums counted from scratch."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.domain import fleet, slots
from gateway.domain.demand import Demand
from gateway.domain.ledger import Entry, Ledger
from gateway.domain.parse import parse_hypervisor
from gateway.domain.records import Hypervisor, View
from gateway.store.store import Store
from tests.objects import consumer, hypervisor, reservation, uuid_of

NAMES = ["h0", "h1", "h2", "h3"]
GROUPINGS = list(fleet.Grouping)


def host_object(name: str, state: dict[str, Any]) -> dict[str, Any]:
    """A host whose bookings may or may not be tracked and whose status may be gone."""
    labels = {} if state["zone"] is None else {"topology.kubernetes.io/zone": state["zone"]}
    spec: dict[str, Any] = {"aggregates": state["aggregates"], "overcommit": {"cpu": "1.5"}}
    if state["tracked"]:
        spec["bookings"] = [reservation("r", {"cpu": state["reserved"]})] + [
            consumer(uuid_of(i), {"cpu": cpu, "memory": f"{memory}Mi"})
            for i, (cpu, memory) in enumerate(state["bookings"])
        ]
    status = None
    if state["status"] is not None:
        capacity, allocated = state["status"]
        status = {
            "capacity": {"cpu": capacity, "memory": f"{capacity}Gi"},
            "allocation": {"cpu": allocated},
        }
    return hypervisor(name, labels=labels, spec=spec, status=status)


states = st.fixed_dictionaries(
    {
        "zone": st.sampled_from(["a", "b", None]),
        "aggregates": st.lists(st.sampled_from(["x", "y"]), unique=True, max_size=2),
        "tracked": st.booleans(),
        "reserved": st.integers(0, 4),
        "bookings": st.lists(st.tuples(st.integers(1, 64), st.integers(1, 512)), max_size=3),
        "status": st.none() | st.tuples(st.integers(0, 96), st.integers(0, 200)),
    }
)
steps = st.lists(st.tuples(st.sampled_from(NAMES), st.none() | states), min_size=1, max_size=25)


@given(st.lists(st.tuples(st.sampled_from(NAMES), states), max_size=4), steps)
def test_carried_totals_equal_a_recount(
    start: list[tuple[str, dict[str, Any]]], changes: list[tuple[str, dict[str, Any] | None]]
) -> None:
    store = Store()
    store.replace([host_object(name, state) for name, state in dict(start).items()])
    for grouping in GROUPINGS:
        store.views.ledger(store.snapshot, fleet.tally(grouping))
    counted = pytest.MonkeyPatch()
    counted.setattr(Ledger, "of", _never)  # from here on, every snapshot must carry them
    try:
        for name, state in changes:
            if state is None:
                store.delete(name)
            else:
                store.upsert(host_object(name, state))
            hosts = list(store.snapshot.by_name.values())
            for grouping in GROUPINGS:
                carried = fleet.fleet_groups(
                    store.views.ledger(store.snapshot, fleet.tally(grouping)), grouping
                )
                counted.undo()
                assert carried == fleet.fleet_capacity(hosts, grouping), grouping
                counted.setattr(Ledger, "of", _never)
    finally:
        counted.undo()


FLAVORS = {
    "small": Demand.of_amounts({"cpu": Decimal(2)}),
    "big": Demand.of_amounts({"cpu": Decimal(16), "memory": Decimal(2**34)}),
}


@given(steps, st.sampled_from(list(View)), st.sampled_from(GROUPINGS))
def test_carried_slots_equal_a_recount(
    changes: list[tuple[str, dict[str, Any] | None]], view: View, grouping: fleet.Grouping
) -> None:
    store = Store()
    tally = slots.SlotTally.of(FLAVORS.items(), view, grouping)
    store.views.ledger(store.snapshot, tally)
    for name, state in changes:
        if state is None:
            store.delete(name)
        else:
            store.upsert(host_object(name, state))
        with pytest.MonkeyPatch.context() as counted:
            counted.setattr(Ledger, "of", _never)
            ledger = store.views.ledger(store.snapshot, tally)
        hosts = list(store.snapshot.ordered)
        for flavor, request in FLAVORS.items():
            carried = slots.read_groups(ledger, flavor, lambda key: ())
            assert carried == slots.slot_groups(hosts, request, grouping, view, flavor)


def _never(*args: Any) -> Ledger:
    raise AssertionError("the ledger was counted afresh instead of carried forward")


def test_a_sum_whose_last_term_went_away_is_gone() -> None:
    one = parse_hypervisor(host_object("h0", _state(status=(8, 2))))
    without_status = parse_hypervisor(host_object("h0", _state(status=None)))
    ledger = Ledger.of(fleet.tally(fleet.Grouping.NONE), [one])
    (group,) = fleet.fleet_groups(ledger.apply([one], [without_status]), fleet.Grouping.NONE)
    cpu = group.resources["cpu"]
    assert (cpu.physical, cpu.capacity, cpu.allocated, cpu.available) == (None,) * 4
    assert (cpu.booked, cpu.unknown_capacity_hosts) == (Decimal(0), 1)
    (empty,) = fleet.fleet_groups(ledger.apply([one], []), fleet.Grouping.NONE)
    assert (empty.hypervisor_count, empty.resources) == (0, {})


def test_untouched_groups_are_shared() -> None:
    def tally(h: Hypervisor) -> Iterator[Entry]:
        yield h.zone, "n", (Decimal(1), h.resources["cpu"].physical or Decimal(0))

    a, b = (parse_hypervisor(host_object(n, _state(zone=n))) for n in ("a", "b"))
    grown = parse_hypervisor(host_object("a", _state(zone="a", status=(16, 0))))
    before = Ledger.of(tally, [a, b])
    after = before.apply([a], [grown])
    assert after.groups["b"] is before.groups["b"]
    assert after.groups["a"] != before.groups["a"]
    assert "a" not in before.apply([a], []).groups


def test_a_change_that_moves_no_sum_is_the_same_ledger() -> None:
    tally = fleet.tally(fleet.Grouping.ZONE)
    a, b = (parse_hypervisor(host_object(n, _state(zone=n))) for n in ("a", "b"))
    again = parse_hypervisor(host_object("a", _state(zone="a")))
    before = Ledger.of(tally, [a, b])
    assert again is not a and before.apply([a], [again]) is before
    # Only the cell that moved is summed again; the host's count and memory are kept.
    more = parse_hypervisor(host_object("a", _state(zone="a", status=(8, 5))))
    after = before.apply([a], [more])
    assert after.groups["a"][None] is before.groups["a"][None]
    assert after.groups["a"]["memory"] is before.groups["a"]["memory"]
    assert after.groups["a"]["cpu"] != before.groups["a"]["cpu"]


@given(st.lists(st.tuples(st.sampled_from(NAMES), states), min_size=1, max_size=4), steps)
def test_carried_bytes_equal_a_recount(
    start: list[tuple[str, dict[str, Any]]], changes: list[tuple[str, dict[str, Any] | None]]
) -> None:
    hosts = {name: parse_hypervisor(host_object(name, state)) for name, state in start}
    ledger = Ledger.of(fleet.tally(fleet.Grouping.ZONE), hosts.values())
    ledger.nbytes()
    for name, state in changes:
        gone = [hosts.pop(name)] if name in hosts else []
        if state is not None:
            hosts[name] = parse_hypervisor(host_object(name, state))
        ledger = ledger.apply(gone, [hosts[name]] if name in hosts else [])
        recounted = Ledger(ledger.tally, ledger.groups)
        assert ledger.nbytes() == recounted.nbytes()


def _state(**overrides: Any) -> dict[str, Any]:
    state = {
        "zone": "a",
        "aggregates": [],
        "tracked": True,
        "reserved": 0,
        "bookings": [],
        "status": (8, 0),
    }
    return {**state, **overrides}


def test_a_ledger_counted_on_a_past_snapshot_is_brought_to_the_current_one() -> None:
    store = Store()
    store.replace([host_object(n, _state(zone=n)) for n in ("a", "b")])
    past = store.snapshot  # a question pins it, the store moves on meanwhile
    store.upsert(host_object("a", _state(zone="b", status=(16, 4))))
    store.delete("b")
    tally = fleet.tally(fleet.Grouping.ZONE)
    store.views.ledger(past, tally)
    with pytest.MonkeyPatch.context() as counted:
        counted.setattr(Ledger, "of", _never)
        carried = fleet.fleet_groups(store.views.ledger(store.snapshot, tally), fleet.Grouping.ZONE)
    hosts = store.snapshot.by_name.values()
    assert carried == fleet.fleet_capacity(hosts, fleet.Grouping.ZONE)
    assert [g.key for g in carried] == ["b"]
