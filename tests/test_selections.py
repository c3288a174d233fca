"""Filtered hosts carried from snapshot to snapshot: the same as judged afresh."""

from __future__ import annotations

import copy
import random
from typing import Any

from gateway.domain.records import Hypervisor
from gateway.sources.demo.source import generate
from gateway.store.selections import Selection
from gateway.store.store import Store
from gateway.store.views import Views


def big(h: Hypervisor) -> bool:
    cpu = h.resources.get("cpu")
    return cpu is not None and cpu.free is not None and cpu.free >= 40


def resized(obj: dict[str, Any], version: str, cpu: int) -> dict[str, Any]:
    changed = copy.deepcopy(obj)
    changed["metadata"]["resourceVersion"] = version
    changed.setdefault("status", {}).setdefault("capacity", {})["cpu"] = str(cpu)
    return changed


def test_a_selection_follows_every_change_as_a_fresh_one_would() -> None:
    objects = generate(80, seed=5, bookings_per_host=3)
    store = Store()
    store.replace(objects)
    first = store.views.selection(store.snapshot, "big", big, store.snapshot.ordered)
    assert [h.name for h in first] == [h.name for h in store.snapshot.ordered if big(h)]
    rng = random.Random(1)
    for i in range(60):
        obj = rng.choice(objects)
        if i % 7 == 3:
            store.delete(obj["metadata"]["name"])
        else:
            store.upsert(resized(obj, f"v{i}", rng.choice([8, 64, 128, 512])))
        snapshot = store.snapshot
        assert store.views.selects(snapshot, "big")  # carried, not judged again
        fresh = [h.name for h in snapshot.ordered if big(h)]
        asked = store.views.selection(snapshot, "big", big, snapshot.ordered)
        assert [h.name for h in asked] == fresh
        assert all(h is snapshot.by_name[h.name] for h in asked)  # the current records


def test_a_selection_nobody_asks_for_is_dropped() -> None:
    objects = generate(10, seed=5, bookings_per_host=1)
    store = Store(Views(keep_unasked=5, unasked_per_host=0))
    store.replace(objects)
    store.views.selection(store.snapshot, "big", big, store.snapshot.ordered)
    for i in range(5):
        store.upsert(resized(objects[0], f"v{i}", 8 + i % 2))
    assert store.views.selects(store.snapshot, "big")
    store.upsert(resized(objects[0], "v5", 8))
    assert not store.views.selects(store.snapshot, "big")


def test_apply_takes_the_old_record_out_and_judges_the_new() -> None:
    store = Store()
    store.replace(generate(5, seed=2, bookings_per_host=1))
    hosts = list(store.snapshot.ordered)
    selection = Selection.of(lambda h: True, hosts)
    assert selection.apply([hosts[1]], []).names == tuple(h.name for h in hosts if h != hosts[1])
    nothing = Selection.of(lambda h: False, hosts)
    assert nothing.apply([hosts[0]], [hosts[0]]).names == ()


def test_a_change_that_selects_the_same_hosts_keeps_the_selection_as_it_is() -> None:
    """A status patch of a host selected before and after: no copy of every name."""
    store = Store()
    store.replace(generate(5, seed=2, bookings_per_host=1))
    hosts = list(store.snapshot.ordered)
    everything = Selection.of(lambda h: True, hosts)
    assert everything.apply([hosts[2]], [hosts[2]]) is everything
    nothing = Selection.of(lambda h: False, hosts)
    assert nothing.apply([hosts[2]], [hosts[2]]) is nothing
    odd = Selection.of(lambda h: h.name != hosts[2].name, hosts)
    joined = Selection(lambda h: True, odd.names).apply([hosts[2]], [hosts[2]])
    assert joined.names == tuple(h.name for h in hosts)  # one came: a new selection


def test_filters_that_select_the_same_hosts_share_one_selection() -> None:
    from decimal import Decimal

    from gateway.api.filters import HypervisorFilter, ResourceRequest, apply_filter

    store = Store()
    store.replace(generate(40, seed=5, bookings_per_host=3))
    snapshot = store.snapshot

    def fit(cpu: int) -> HypervisorFilter:
        return HypervisorFilter(can_fit=[ResourceRequest(resource="cpu", amount=Decimal(cpu))])

    views = store.views
    eight = apply_filter(views, snapshot, fit(8))
    assert apply_filter(views, snapshot, fit(8)).names is eight.names  # type: ignore[attr-defined]
    assert views.figures().entries == 1
    sixty_four = apply_filter(views, snapshot, fit(64))
    assert views.figures().entries == 2
    assert set(h.name for h in sixty_four) <= set(h.name for h in eight)


def test_a_filter_that_fails_on_a_changed_host_is_dropped_not_the_change() -> None:
    objects = generate(10, seed=5, bookings_per_host=1)
    store = Store()
    store.replace(objects)
    victim = objects[0]["metadata"]["name"]

    def brittle(h: Hypervisor) -> bool:
        if h.name == victim and h.resource_version == "boom":
            raise ValueError("cannot judge")
        return True

    store.views.selection(store.snapshot, "brittle", brittle, store.snapshot.ordered)
    store.upsert(resized(objects[0], "boom", 16))
    assert store.snapshot.by_name[victim].resource_version == "boom"  # the change landed
    assert not store.views.selects(store.snapshot, "brittle")


def test_a_selection_judged_on_a_past_snapshot_is_brought_to_the_current_one() -> None:
    objects = generate(30, seed=5, bookings_per_host=2)
    store = Store()
    store.replace(objects)
    past = store.snapshot  # a slow question pins it, the store moves on meanwhile
    for i, obj in enumerate(objects[:5]):
        store.upsert(resized(obj, f"v{i}", [8, 512][i % 2]))
    store.delete(objects[7]["metadata"]["name"])
    store.views.selection(past, "big", big, past.ordered)
    current = store.snapshot
    assert store.views.selects(current, "big")  # the next question does not judge it again
    asked = store.views.selection(current, "big", big, current.ordered)
    assert [h.name for h in asked] == [h.name for h in current.ordered if big(h)]
