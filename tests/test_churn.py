"""Demo churn: one instance created or deleted per step, the object consistent after it."""

from __future__ import annotations

import asyncio
import copy
from decimal import Decimal
from typing import Any

import pytest

from gateway.cli import main
from gateway.domain.parse import parse_hypervisor
from gateway.domain.records import ConsumerBooking, Hypervisor
from gateway.sources.demo.churn import Churn
from gateway.sources.demo.source import DemoSource, generate
from gateway.store.snapshot import Change, ChangeType, Snapshot
from gateway.store.store import Store
from tests.support import eventually


def consumers(record: Hypervisor) -> dict[str, ConsumerBooking]:
    return {b.uuid: b for b in record.consumers}


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
        for name in ("cpu", "memory"):
            amount = sign * booking.resources[name]
            assert after.resources[name].booked == before.resources[name].booked + amount
            assert after.allocation[name] == before.allocation[name] + amount
        running = {i.id for i in after.instances if i.active}
        assert (uuid in running) == bool(added)
        assert after.num_instances == len(after.instances)
        assert after.warnings == ()
        assert after.resources["cpu"].free >= min(before.resources["cpu"].free, Decimal(0))
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
