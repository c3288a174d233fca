"""Demo churn: one instance created or deleted per step, the object consistent after it."""

from __future__ import annotations

import asyncio
import copy
import gc
from decimal import Decimal
from typing import Any

import pytest

from gateway.cli import main
from gateway.domain.parse import parse_hypervisor
from gateway.domain.quantity import parse_quantity
from gateway.domain.records import ConsumerBooking, Hypervisor, Instance
from gateway.sources.demo.churn import Churn
from gateway.sources.demo.plan import TRACKED
from gateway.sources.demo.source import DemoSource, generate, generate_fleet
from gateway.store.snapshot import Change, ChangeType, Snapshot
from gateway.store.store import Store
from tests.support import eventually


def consumers(record: Hypervisor) -> dict[str, ConsumerBooking]:
    return {b.uuid: b for b in record.consumers}


def instances(record: Hypervisor) -> dict[str, Instance]:
    return {i.id: i for i in record.instances}


def served(fleet: list[dict[str, Any]]) -> Store:
    store = Store()
    store.replace(copy.deepcopy(fleet))
    return store


def test_each_step_books_or_releases_one_running_instance() -> None:
    fleet = generate(120, seed=5)
    records = {o["metadata"]["name"]: parse_hypervisor(o) for o in fleet}
    store = served(fleet)
    churn = Churn(store, fleet, seed=5)
    seen = set()
    for _ in range(200):
        changed = churn.step()
        assert changed is not None
        after = parse_hypervisor(changed)
        assert store.snapshot.by_name[after.name].resources == after.resources
        before = records[after.name]
        added = consumers(after).keys() - consumers(before).keys()
        removed = consumers(before).keys() - consumers(after).keys()
        assert len(added) + len(removed) == 1
        (uuid,) = added or removed
        booking = consumers(after if added else before)[uuid]
        sign = 1 if added else -1
        seen.add(sign)
        for name, amount in booking.resources.items():
            assert after.resources[name].booked == before.resources[name].booked + sign * amount
            assert after.allocation[name] == before.allocation[name] + sign * amount
        running = {i.id for i in after.instances if i.active}
        assert (uuid in running) == bool(added)
        assert after.num_instances == len(after.instances)
        assert after.warnings == ()
        assert after.resources["cpu"].free >= min(before.resources["cpu"].free, Decimal(0))
        records[after.name] = after
    assert seen == {1, -1}


def test_an_untracked_host_changes_its_instances_and_allocation() -> None:
    """A cluster of today (no spec.bookings): the agent's figures move all the same."""
    fleet = generate_fleet(120, 5, None, tracked=0)
    records = {o["metadata"]["name"]: parse_hypervisor(o) for o in fleet.objects}
    sizes = {u: {k: parse_quantity(v) for k, v in r.items()} for u, r in fleet.domains.items()}
    store = served(fleet.objects)
    churn = Churn(store, fleet.objects, seed=5, domains=fleet.domains)
    seen = set()
    for _ in range(200):
        changed = churn.step()
        assert changed is not None and "bookings" not in changed["spec"]
        after = parse_hypervisor(changed)
        assert store.snapshot.by_name[after.name].resources == after.resources
        before = records[after.name]
        added = instances(after).keys() - instances(before).keys()
        removed = instances(before).keys() - instances(after).keys()
        assert len(added) + len(removed) == 1
        (uuid,) = added or removed
        if added:
            # The size of an instance already running there.
            sizes[uuid] = {k: parse_quantity(v) for k, v in churn.domains[uuid].items()}
            assert sizes[uuid] in [sizes[u] for u in instances(before) if u in sizes]
            assert instances(after)[uuid].active
        sign = 1 if added else -1
        seen.add(sign)
        assert after.allocation == {
            name: total + sign * sizes[uuid].get(name, 0)
            for name, total in before.allocation.items()
        }
        unallocated = before.resources["cpu"].unallocated
        assert unallocated is not None
        assert after.resources["cpu"].unallocated == unallocated - sign * sizes[uuid].get("cpu", 0)
        assert after.num_instances == len(after.instances)
        assert after.warnings == ()
        records[after.name] = after
    assert seen == {1, -1}


def test_the_same_seed_makes_the_same_changes() -> None:
    def changes(seed: int) -> list[dict[str, Any] | None]:
        fleet = generate(60, seed=1)
        churn = Churn(served(fleet), fleet, seed=seed)
        return [churn.step() for _ in range(20)]

    assert changes(2) == changes(2)
    assert changes(2) != changes(3)


def test_hosts_that_cannot_take_a_change_are_left_alone() -> None:
    fleet = generate(200, seed=0)
    changeable = set(Churn(served(fleet), fleet).names)
    records = [parse_hypervisor(o) for o in fleet]
    assert changeable and len(changeable) < len(records)
    for record in records:
        if record.name in changeable:
            assert record.ready and record.maintenance is None and record.bookings_tracked
    assert Churn(Store(), []).step() is None
    # With the sizes of their domains, untracked hosts change too.
    sized = generate_fleet(200, 0, None, TRACKED)
    with_untracked = set(Churn(served(sized.objects), sized.objects, 0, sized.domains).names)
    assert with_untracked > changeable
    assert all(
        not parse_hypervisor(o).bookings_tracked
        for o in fleet
        if o["metadata"]["name"] in with_untracked - changeable
    )


async def test_the_demo_source_churns_and_confirms() -> None:
    store, changes = Store(), []

    def listen(snapshot: Snapshot, batch: list[Change]) -> None:
        changes.extend(batch)

    store.listen(listen)
    source = DemoSource(size=30, seed=2, churn=0.01)
    task = asyncio.create_task(source.run(store))
    try:
        await eventually(lambda: sum(c.type is ChangeType.MODIFIED for c in changes) >= 3)
        assert source.status.seconds_since_confirmed() < 1
        assert source.status.last_event_at is not None
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


def test_each_change_gets_the_next_resource_version_and_the_store_keeps_it() -> None:
    fleet = generate(40, seed=3)
    store = served(fleet)
    churn = Churn(store, fleet, seed=3, version=40)
    versions = []
    for _ in range(5):
        changed = churn.step()
        assert changed is not None
        versions.append(changed["metadata"]["resourceVersion"])
        assert store.snapshot.by_name[changed["metadata"]["name"]].resource_version == versions[-1]
    assert versions == ["41", "42", "43", "44", "45"]


def test_the_objects_kept_to_change_are_out_of_the_collectors_reach() -> None:
    """Decoded, a large fleet's objects made every collection of the heap walk them."""
    fleet = generate(20, seed=1)
    churn = Churn(served(fleet), fleet, seed=1)
    churn.step()
    assert churn.objects
    assert not any(gc.is_tracked(kept) for kept in churn.objects.values())


async def test_the_demo_source_versions_every_object_as_an_api_server_does() -> None:
    store, versions = Store(), []

    def listen(snapshot: Snapshot, batch: list[Change]) -> None:
        versions.extend(int(c.hypervisor.resource_version or 0) for c in batch)

    source = DemoSource(size=30, seed=2, churn=0.01)
    task = asyncio.create_task(source.run(store))
    try:
        await eventually(lambda: store.ready)
        first = [int(h.resource_version or 0) for h in store.snapshot.by_name.values()]
        assert sorted(first) == list(range(1, 31))
        store.listen(listen)
        await eventually(lambda: len(versions) >= 3)
        assert versions == sorted(versions) and versions[0] > 30
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_an_untracked_demo_fleet_churns_too() -> None:
    store, changed = Store(), set[str]()

    def listen(snapshot: Snapshot, batch: list[Change]) -> None:
        changed.update(c.hypervisor.name for c in batch if c.type is ChangeType.MODIFIED)

    store.listen(listen)
    source = DemoSource(size=30, seed=2, churn=0.01, tracked=0)
    task = asyncio.create_task(source.run(store))
    try:
        await eventually(lambda: len(changed) >= 3)
        assert not any(store.snapshot.by_name[name].bookings_tracked for name in changed)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_a_still_demo_fleet_is_confirmed_without_changes() -> None:
    store = Store()
    source = DemoSource(size=10, confirm_every=0.01)
    task = asyncio.create_task(source.run(store))
    try:
        await eventually(lambda: store.ready)
        generation, confirmed = store.snapshot.generation, source.status.confirmed_at
        assert confirmed is not None
        await eventually(lambda: (source.status.confirmed_at or 0) > confirmed)
        assert store.snapshot.generation == generation
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


def test_a_negative_churn_interval_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--demo", "--demo-churn", "-1"]) == 2
    assert "churn interval must not be negative" in capsys.readouterr().err


async def test_the_demo_churn_keeps_to_its_clock_however_long_a_step_takes() -> None:
    """Each change costs 4 ms of the clock; ten a second are still ten a second."""
    now = [0.0]
    changed_at: list[float] = []

    async def sleep(seconds: float) -> None:
        now[0] += seconds
        await asyncio.sleep(0)

    def listen(snapshot: Snapshot, batch: list[Change]) -> None:
        changed_at.extend(now[0] for c in batch if c.type is ChangeType.MODIFIED)
        now[0] += 0.004

    store = Store()
    source = DemoSource(size=30, seed=2, churn=0.1, clock=lambda: now[0], sleep=sleep)
    task = asyncio.create_task(source.run(store))
    try:
        await eventually(lambda: store.ready)
        store.listen(listen)
        await eventually(lambda: len(changed_at) >= 50)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    start = changed_at[0]
    for k, at in enumerate(changed_at[:50]):
        assert at - start == pytest.approx(k * 0.1, abs=0.0041)
