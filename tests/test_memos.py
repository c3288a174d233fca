"""What answers keep for the next ones: per store, and the totals of the newest snapshot."""

from __future__ import annotations

import asyncio
import gc
import weakref

from gateway.api.memos import RESOURCE_BYTES, Answers, Totals
from gateway.domain import fleet
from gateway.domain.bounded import Memos
from gateway.store.snapshot import Snapshot
from gateway.store.store import Store
from tests.objects import hypervisor


def counted(snapshot: Snapshot) -> asyncio.Future[list[fleet.FleetGroup]]:
    """The fleet's totals of ``snapshot``, counted."""
    future = asyncio.get_running_loop().create_future()
    future.set_result(fleet.fleet_capacity(snapshot.ordered, fleet.Grouping.NONE))
    return future


def store_of(*names: str) -> Store:
    store = Store()
    store.replace([hypervisor(name, status={"capacity": {"cpu": 8}}) for name in names])
    return store


def test_the_app_installs_them_once_and_every_context_finds_them() -> None:
    memos = Memos()
    installed = Answers.install(memos, completed_bytes=1000, event_bytes=500)
    assert Answers.of(memos) == installed
    assert installed.completed.max_bytes == 1000 and installed.totals.max_bytes == 500
    assert Answers.of(Memos()).completed.max_bytes > 1000  # none installed: the defaults


async def test_totals_are_kept_for_the_newest_snapshot_only() -> None:
    store = store_of("a")
    old = store.snapshot
    store.replace([hypervisor("a"), hypervisor("b")])
    totals = Totals()
    newest = counted(store.snapshot)
    totals.put(store.snapshot, "k", newest)
    totals.put(old, "k", counted(old))  # an older snapshot's: not kept
    assert totals.get(store.snapshot, "k") is newest
    assert totals.get(old, "k") is None
    assert totals.figures().hits == 1


async def test_totals_are_bounded_in_bytes_and_hold_no_snapshot() -> None:
    store = store_of("a")
    (group,) = counted(store.snapshot).result()
    size = RESOURCE_BYTES * (1 + len(group.resources))
    totals = Totals(max_bytes=3 * size)
    for key in range(10):
        totals.put(store.snapshot, key, counted(store.snapshot))
    figures = totals.figures()
    assert (figures.entries, figures.bytes, figures.evictions) == (3, 3 * size, 7)
    held = weakref.ref(store.snapshot)
    store.replace([hypervisor("b")])
    gc.collect()
    assert held() is None
