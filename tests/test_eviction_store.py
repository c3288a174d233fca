"""The eviction store: snapshots that never change, every change reported once, absence."""

from __future__ import annotations

from gateway.store.evictions import NOT_LOADED, EvictionChange, EvictionSnapshot, EvictionStore
from gateway.store.feed import ChangeFeed
from gateway.store.snapshot import ChangeType
from tests.objects import eviction


def _recorded(store: EvictionStore) -> list[list[tuple[ChangeType, str]]]:
    seen: list[list[tuple[ChangeType, str]]] = []

    def listener(snapshot: EvictionSnapshot, changes: list[EvictionChange]) -> None:
        seen.append([(c.type, c.eviction.name) for c in changes])

    store.listen(listener)
    return seen


def test_unavailable_until_a_complete_set_arrives() -> None:
    store = EvictionStore()
    assert store.snapshot.unavailable == NOT_LOADED and not store.ready
    store.replace([eviction("a", "node-1", state="Running")])
    assert store.ready and store.snapshot.unavailable is None
    assert [e.name for e in store.snapshot.ordered] == ["a"]


def test_a_snapshot_never_changes_and_each_change_is_reported_once() -> None:
    store = EvictionStore()
    seen = _recorded(store)
    store.replace([eviction("a", "node-1"), eviction("b", "node-2")], "10")
    first = store.snapshot
    store.upsert(eviction("c", "node-1", state="Running"), "11")
    store.upsert(eviction("a", "node-1", state="Failed"), "12")
    store.delete("b", "13")
    store.delete("b", "14")  # gone already: no change
    assert sorted(first.by_name) == ["a", "b"]
    assert [e.name for e in store.snapshot.ordered] == ["a", "c"]
    assert seen == [
        [(ChangeType.ADDED, "a"), (ChangeType.ADDED, "b")],
        [(ChangeType.ADDED, "c")],
        [(ChangeType.MODIFIED, "a")],
        [(ChangeType.DELETED, "b")],
    ]
    assert store.resource_version == "14"


def test_an_equal_object_is_no_change() -> None:
    """Files carry no resourceVersion: a reload of the same content reports nothing."""
    store = EvictionStore()
    seen = _recorded(store)
    store.replace([eviction("a", "node-1", state="Running")])
    kept = store.snapshot
    store.replace([eviction("a", "node-1", state="Running")])
    store.upsert(eviction("a", "node-1", state="Running"))
    assert store.snapshot is kept
    assert len(seen) == 1


def test_evictions_by_host_in_name_order() -> None:
    store = EvictionStore()
    store.replace([eviction("z", "node-1"), eviction("a", "node-1"), eviction("m", "node-2")])
    by_host = store.snapshot.by_hypervisor
    assert {h: [e.name for e in found] for h, found in by_host.items()} == {
        "node-1": ["a", "z"],
        "node-2": ["m"],
    }


def test_absent_drops_every_eviction_until_listed_again() -> None:
    store = EvictionStore()
    store.replace([eviction("a", "node-1")], "5")
    seen = _recorded(store)
    store.absent("no Eviction CRD")
    assert store.snapshot.unavailable == "no Eviction CRD"
    assert len(store.snapshot) == 0 and not store.ready
    store.absent("no Eviction CRD")  # the same state: no new snapshot
    store.replace([eviction("b", "node-2")], "9")
    assert store.snapshot.unavailable is None
    assert seen == [[(ChangeType.DELETED, "a")], [(ChangeType.ADDED, "b")]]


def test_objects_without_a_name_are_rejected() -> None:
    store = EvictionStore()
    store.replace([{"kind": "Eviction", "metadata": {}}, eviction("a", "node-1")])
    assert store.rejected == {"#0": "metadata.name is missing"}
    assert list(store.snapshot.by_name) == ["a"]


async def test_the_change_feed_hands_eviction_changes_to_subscribers() -> None:
    store = EvictionStore()
    feed = ChangeFeed(store)
    feed.start()
    with feed.changes() as commits:
        assert feed.subscribers == 1  # registered on entering
        store.replace([eviction("a", "node-1")])
        commit = await anext(commits)
    (change,) = commit.changes
    assert (change.type, change.eviction.name) == (ChangeType.ADDED, "a")
    assert (list(commit.before.by_name), list(commit.after.by_name)) == ([], ["a"])
    feed.stop()
