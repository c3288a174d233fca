"""The store's views: carried per change, kept by generation, bounded, made once."""

from __future__ import annotations

import asyncio
import copy
import gc
import threading
from collections.abc import Iterable
from typing import Any

from gateway.domain import fleet
from gateway.domain.ledger import Ledger
from gateway.domain.records import Hypervisor
from gateway.sources.demo.source import generate
from gateway.store.snapshot import Snapshot
from gateway.store.store import Store
from gateway.store.views import Views, ledger_key
from tests.support import eventually

ZONES = fleet.tally(fleet.Grouping.ZONE)


class Count:
    """A view that counts the hosts of a fleet, of a given size in bytes."""

    def __init__(self, value: int, size: int = 100) -> None:
        self.value = value
        self.size = size

    def apply(self, removed: Iterable[Hypervisor], added: Iterable[Hypervisor]) -> Count:
        return Count(self.value - len(list(removed)) + len(list(added)), self.size)

    def nbytes(self) -> int:
        return self.size


def resized(obj: dict[str, Any], version: str, cpu: int) -> dict[str, Any]:
    changed = copy.deepcopy(obj)
    changed["metadata"]["resourceVersion"] = version
    changed.setdefault("status", {}).setdefault("capacity", {})["cpu"] = str(cpu)
    return changed


def fleet_of(hosts: int, views: Views | None = None) -> tuple[Store, list[dict[str, Any]]]:
    objects = generate(hosts, seed=3, bookings_per_host=2)
    store = Store(views)
    store.replace(objects)
    return store, objects


def test_a_view_is_carried_to_each_new_snapshot_and_read_there() -> None:
    store, objects = fleet_of(20)
    views = store.views
    views.ledger(store.snapshot, ZONES)
    made = views.made
    for i in range(5):
        store.upsert(resized(objects[i], f"v{i}", 64 + i))
        assert views.keeps(store.snapshot, ZONES)
        carried = views.ledger(store.snapshot, ZONES)
        assert carried.groups == Ledger.of(ZONES, store.snapshot.by_name.values()).groups
    assert views.made == made  # carried, never made again
    assert views.figures().hits == 5


def test_a_peek_finds_the_view_kept_and_makes_none() -> None:
    store, objects = fleet_of(20)
    views = store.views
    key = ledger_key(ZONES)
    assert views.peek(store.snapshot, key) is None and views.made == 0
    made = views.ledger(store.snapshot, ZONES)
    assert views.peek(store.snapshot, key) is made
    same = copy.deepcopy(objects[0])
    same["metadata"]["resourceVersion"] = "again"  # a new version that moves no sum
    store.upsert(same)
    assert views.peek(store.snapshot, key) is made  # carried as the same value
    store.upsert(resized(objects[0], "resized", 99))
    moved = views.peek(store.snapshot, key)
    assert moved is not None and moved is not made and views.made == 1


def test_a_snapshot_still_held_reads_its_own_views() -> None:
    store, objects = fleet_of(10)
    held = store.snapshot
    before = store.views.get(held, "count", lambda: Count(len(held)))
    store.delete(objects[0]["metadata"]["name"])
    assert store.views.get(store.snapshot, "count", lambda: Count(-1)).value == 9
    assert store.views.get(held, "count", lambda: Count(-1)) is before  # its fleet's


def test_views_of_snapshots_no_longer_held_are_let_go() -> None:
    store, objects = fleet_of(10)
    store.views.get(store.snapshot, "count", lambda: Count(len(store.snapshot)))
    held = store.snapshot
    generation = held.generation
    for i in range(3):
        store.upsert(resized(objects[i], f"v{i}", 8 + i))
    assert store.views.snapshots_live >= 2  # the current one and the one held here
    assert generation in store.views._kept["count"].by_generation
    del held
    gc.collect()
    store.upsert(resized(objects[0], "last", 4))
    assert generation not in store.views._kept["count"].by_generation
    assert store.views.snapshots_live <= 2  # the current one, and the one it replaced


def test_a_view_of_a_snapshot_the_store_did_not_make_is_not_kept() -> None:
    store, _ = fleet_of(5)
    stranger = Snapshot(store.snapshot.generation, store.snapshot.by_name, None)
    assert store.views.get(stranger, "count", lambda: Count(1)).value == 1
    assert not store.views.has(stranger, "count")
    assert store.views.get(store.snapshot, "count", lambda: Count(2)).value == 2


def test_views_are_bounded_in_number_the_least_recently_asked_let_go() -> None:
    store, _ = fleet_of(5, Views(max_views=3))
    views, snapshot = store.views, store.snapshot
    for key in ("a", "b", "c"):
        views.get(snapshot, key, lambda: Count(1))
    views.get(snapshot, "a", lambda: Count(1))  # asked again: the most recent
    store.delete(next(iter(snapshot.by_name)))
    views.get(store.snapshot, "a", lambda: Count(1))
    views.get(store.snapshot, "d", lambda: Count(1))
    assert views.figures().entries == 3 and views.figures().evictions == 1
    assert not views.has(store.snapshot, "b")  # the least recently asked
    assert all(views.has(store.snapshot, key) for key in ("a", "c", "d"))


def test_views_are_bounded_in_bytes() -> None:
    store, _ = fleet_of(5, Views(max_bytes=1000))
    views, snapshot = store.views, store.snapshot
    for i in range(10):
        views.get(snapshot, i, lambda: Count(1, size=300))
        assert views.figures().bytes <= 1000
    assert views.figures().entries == 3
    assert views.figures().evictions == 7
    assert views.get(snapshot, "huge", lambda: Count(1, size=1001)).value == 1
    assert not views.has(snapshot, "huge")  # larger than the budget: made, never kept


def test_an_unchanged_view_held_for_two_generations_counts_once() -> None:
    store, objects = fleet_of(5)
    held = store.snapshot
    store.views.consumers(held)
    store.upsert(resized(objects[0], "patched", 16))  # a status patch: the same index
    assert store.views.indexes_consumers(store.snapshot)
    index = store.views.consumers(store.snapshot).index
    assert index is store.views.consumers(held).index
    assert store.views.figures().bytes == index.nbytes()


async def test_questions_asking_at_once_share_one_pass() -> None:
    store, _ = fleet_of(10)
    release = threading.Event()
    passes: list[int] = []

    def make() -> Count:
        passes.append(1)
        release.wait()
        return Count(10)

    snapshot = store.snapshot
    askers = [
        asyncio.ensure_future(asyncio.to_thread(store.views.get, snapshot, "slow", make))
        for _ in range(4)
    ]
    await eventually(lambda: passes == [1])
    release.set()
    results = await asyncio.gather(*askers)
    assert passes == [1]
    assert all(r is results[0] for r in results)


def test_a_view_made_while_the_store_moved_on_is_carried_to_the_current_snapshot() -> None:
    store, objects = fleet_of(10)
    held = store.snapshot
    name = objects[0]["metadata"]["name"]

    def make() -> Count:
        store.delete(name)  # a change published while the pass runs
        return Count(len(held))

    store.views.get(held, "count", make)
    assert store.views.has(store.snapshot, "count")
    assert store.views.get(store.snapshot, "count", lambda: Count(-1)).value == 9


def test_the_bytes_follow_the_snapshots_held_and_let_go() -> None:
    """Subscribers behind hold hundreds of snapshots: each holds its view's value,
    counted while held, and let go with the last snapshot that held it."""
    store, objects = fleet_of(10)
    store.views.get(store.snapshot, "count", lambda: Count(10))
    held = []
    for i in range(50):
        held.append(store.snapshot)
        store.upsert(resized(objects[i % 10], f"v{i}", 8 + i))
    assert store.views.snapshots_live >= 51
    assert store.views.figures().bytes == 100 * 51  # a value of its own per generation
    del held
    gc.collect()
    store.upsert(resized(objects[0], "last", 4))
    assert store.views.snapshots_live <= 2
    assert store.views.figures().bytes <= 200
    assert store.views.get(store.snapshot, "count", lambda: Count(-1)).value == 10


def test_a_snapshot_between_kept_ones_has_its_view_carried_not_made() -> None:
    """A query holds the snapshot current when it began; a pass made meanwhile for an
    earlier one is carried to it rather than a pass made for it alone."""
    store, objects = fleet_of(10)
    first = store.snapshot
    store.upsert(resized(objects[0], "v1", 12))
    between = store.snapshot
    store.upsert(resized(objects[1], "v2", 14))
    passes = []

    def zones(snapshot: Snapshot) -> Ledger:
        passes.append(snapshot.generation)
        return Ledger.of(ZONES, snapshot.by_name.values())

    store.views.get(first, ("ledger", ZONES), lambda: zones(first))  # kept there, and now
    assert not store.views.keeps(between, ZONES)
    carried = store.views.get(between, ("ledger", ZONES), lambda: zones(between))
    assert passes == [first.generation]
    assert carried.groups == zones(between).groups
