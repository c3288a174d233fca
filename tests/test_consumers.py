"""The consumer index: carried by the changes, it reads as one built afresh."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.domain.records import ConsumerBooking
from gateway.store.consumers import REORDER_ABOVE, SHARDS, ConsumerIndex
from gateway.store.snapshot import Snapshot
from gateway.store.store import Store
from gateway.store.views import Views
from tests.objects import consumer, hypervisor, uuid_of

HOSTS = ["a", "b", "c", "d", "e"]
ABSENT = "ffffffff-ffff-4fff-bfff-ffffffffffff"


def host(name: str, uuids: Iterable[int], cpu: int = 8) -> dict[str, Any]:
    """A tracked host with a consumer booking per number (the same UUID for the same one)."""
    bookings = [consumer(uuid_of(n), {"cpu": 1}, projectID=f"p{n % 3}") for n in uuids]
    return hypervisor(name, spec={"bookings": bookings}, status={"capacity": {"cpu": cpu}})


def fresh(snapshot: Snapshot) -> dict[str, tuple[ConsumerBooking, ...]]:
    """The index as it was built per snapshot before it was carried."""
    index: dict[str, list[ConsumerBooking]] = {}
    for record in snapshot.ordered:
        for booking in record.consumers:
            index.setdefault(booking.uuid, []).append(booking)
    return {uuid: tuple(bookings) for uuid, bookings in sorted(index.items())}


def hosts_of(index: ConsumerIndex) -> dict[str, tuple[str, ...]]:
    return {uuid: index.hosts(uuid) for shard in index._hosts.shards() for uuid in shard}


def assert_reads_as_fresh(store: Store, snapshot: Snapshot) -> None:
    expected = fresh(snapshot)
    index = store.views.consumers(snapshot)
    assert list(index) == list(expected) and len(index) == len(expected)
    assert dict(index.items()) == expected and dict(index.each()) == expected
    rebuilt = ConsumerIndex.of(snapshot.ordered)
    assert hosts_of(index.index) == hosts_of(rebuilt)
    assert list(index.index.order()) == list(expected)
    assert ABSENT not in index and index.get(ABSENT) is None


# A change: (host, its consumers, its cpu) writes it, (host, None, any) deletes it.
changes = st.lists(
    st.tuples(
        st.sampled_from(HOSTS),
        st.none() | st.lists(st.integers(0, 12), max_size=6),
        st.integers(1, 3),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(changes, st.lists(st.booleans(), min_size=25, max_size=25))
def test_carried_through_any_changes_it_reads_as_one_built_afresh(
    steps: list[tuple[str, list[int] | None, int]], asked: list[bool]
) -> None:
    """Adds, deletes, status-only changes (the cpu), booking changes and migrations
    (a number booked on a second host, then gone from the first). Old snapshots, read
    after all changes, read as they were."""
    store = Store()
    store.replace([host("a", [1, 2]), host("b", [2, 3]), host("c", [])])
    assert_reads_as_fresh(store, store.snapshot)
    held = [store.snapshot]
    booked: dict[str, list[int]] = {"a": [1, 2], "b": [2, 3], "c": []}
    for (name, uuids, cpu), ask in zip(steps, asked, strict=False):
        if uuids is None:
            store.delete(name)
            booked.pop(name, None)
        else:
            uuids = booked.get(name, uuids) if cpu == 3 else uuids  # 3: a status patch
            store.upsert(host(name, uuids, cpu))
            booked[name] = uuids
        assert store.views.indexes_consumers(store.snapshot)  # carried, not built again
        if ask:
            assert_reads_as_fresh(store, store.snapshot)
        held.append(store.snapshot)
    for snapshot in reversed(held):
        assert_reads_as_fresh(store, snapshot)


def test_a_status_patch_leaves_the_index_as_it_was() -> None:
    store = Store()
    store.replace([host(f"node{i:03d}", range(10 * i, 10 * i + 10)) for i in range(50)])
    before = store.views.consumers(store.snapshot).index
    store.upsert(host("node007", range(70, 80), cpu=16))  # a new record, the same bookings
    after = store.views.consumers(store.snapshot).index
    assert after is before
    assert all(a is b for a, b in zip(before._hosts.shards(), after._hosts.shards(), strict=True))
    [booking] = store.views.consumers(store.snapshot)[uuid_of(75)]
    assert booking.hypervisor == "node007"


def test_a_new_booking_copies_the_one_shard_of_its_consumer() -> None:
    store = Store()
    store.replace([host(f"node{i:03d}", range(10 * i, 10 * i + 10)) for i in range(50)])
    before = store.views.consumers(store.snapshot).index
    store.upsert(host("node007", [*range(70, 80), 1000]))
    after = store.views.consumers(store.snapshot).index
    pairs = list(zip(before._hosts.shards(), after._hosts.shards(), strict=True))
    assert len(pairs) == SHARDS and sum(a is not b for a, b in pairs) == 1
    assert after.hosts(uuid_of(1000)) == ("node007",) and before.hosts(uuid_of(1000)) == ()


def test_a_live_migration_keeps_both_hosts_in_name_order() -> None:
    store = Store()
    store.replace([host("target", []), host("source", [1]), host("other", [2])])
    index = store.views.consumers(store.snapshot)
    store.upsert(host("target", [1]))  # booked on the target too: migrating
    migrating = store.views.consumers(store.snapshot)
    assert migrating.hosts(uuid_of(1)) == ("source", "target")
    assert [b.hypervisor for b in migrating[uuid_of(1)]] == ["source", "target"]
    store.upsert(host("source", []))  # done
    assert store.views.consumers(store.snapshot).hosts(uuid_of(1)) == ("target",)
    assert index.hosts(uuid_of(1)) == ("source",)  # an old snapshot's index never changes


def test_a_consumer_booked_twice_on_one_host_names_it_once() -> None:
    store = Store()
    store.replace([host("a", [1, 1]), host("b", [])])
    assert store.views.consumers(store.snapshot).hosts(uuid_of(1)) == ("a",)
    store.upsert(host("b", [1]))
    index = store.views.consumers(store.snapshot)
    assert index.hosts(uuid_of(1)) == ("a", "b")
    assert [b.hypervisor for b in index[uuid_of(1)]] == ["a", "a", "b"]
    assert_reads_as_fresh(store, store.snapshot)


def test_nothing_is_indexed_until_a_question_asks() -> None:
    store = Store()
    store.replace([host("a", [1])])
    store.upsert(host("b", [2]))
    assert not store.views.indexes_consumers(store.snapshot)
    assert list(store.views.consumers(store.snapshot)) == [uuid_of(1), uuid_of(2)]
    assert store.views.indexes_consumers(store.snapshot)


def test_a_big_batch_of_changes_is_indexed_again_when_asked() -> None:
    store = Store()
    store.replace([host(f"node{i:03d}", [i]) for i in range(300)])
    assert len(store.views.consumers(store.snapshot)) == 300
    store.replace([host(f"node{i:03d}", [i + 1]) for i in range(300)])  # 300 changes
    assert not store.views.indexes_consumers(store.snapshot)
    assert_reads_as_fresh(store, store.snapshot)


def test_carried_unasked_through_some_changes_per_host_then_dropped() -> None:
    store = Store(Views(keep_unasked=3, unasked_per_host=1))
    store.replace([host(name, [i]) for i, name in enumerate(HOSTS)])  # 5 hosts
    assert store.views.consumers(store.snapshot)  # asked at generation 1
    for cpu in range(1, 6):
        store.upsert(host("a", [0], cpu=cpu))
    assert store.views.indexes_consumers(store.snapshot)  # 5 changes: carried
    store.upsert(host("a", [0], cpu=6))
    assert not store.views.indexes_consumers(store.snapshot)  # the 6th: dropped
    assert store.views.consumers(store.snapshot)  # asked again: indexed anew, and carried from here
    for cpu in range(10, 15):
        store.upsert(host("a", [0], cpu=cpu))
    assert store.views.indexes_consumers(store.snapshot)


def test_the_order_is_found_from_the_last_one_and_the_changes_since() -> None:
    store = Store()
    store.replace([host(f"node{i:03d}", range(10 * i, 10 * i + 10)) for i in range(50)])
    assert not store.views.indexes_consumers(store.snapshot, ordered=True)
    first = store.views.consumers(store.snapshot).uuids
    assert list(first) == sorted(uuid_of(n) for n in range(500))
    store.upsert(host("node001", [*range(10, 19), 1000]))  # one consumer gone, one new
    assert store.views.indexes_consumers(store.snapshot, ordered=True)
    second = store.views.consumers(store.snapshot).uuids
    assert list(second) == sorted(uuid_of(n) for n in [*range(500), 1000] if n != 19)
    assert list(first) == sorted(uuid_of(n) for n in range(500))  # the old order stays
    for i in range(50, 50 + 2 * REORDER_ABOVE):  # new consumers in most shards
        store.upsert(host(f"node{i:03d}", range(10 * i, 10 * i + 10)))
    assert not store.views.indexes_consumers(store.snapshot, ordered=True)  # a pass over them again
    assert_reads_as_fresh(store, store.snapshot)


def test_a_status_patch_keeps_the_order_at_hand() -> None:
    store = Store()
    store.replace([host("a", [1, 2]), host("b", [3])])
    order = store.views.consumers(store.snapshot).uuids
    store.upsert(host("a", [1, 2], cpu=16))
    assert store.views.consumers(store.snapshot).uuids is order


def paused(
    method: Callable[..., Any],
) -> tuple[Callable[..., Any], threading.Event, threading.Event]:
    """``method``, stopping its first call on a worker thread until told to go on."""
    reached, go = threading.Event(), threading.Event()

    def wrapper(*args: Any) -> Any:
        if threading.current_thread() is not threading.main_thread() and not reached.is_set():
            reached.set()
            assert go.wait(10)
        return method(*args)

    return wrapper, reached, go


@pytest.mark.parametrize("where", ["of", "apply"])
def test_a_change_while_a_thread_indexes_an_older_snapshot_is_not_lost(
    monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A question in a worker thread indexes the snapshot it holds while the event loop
    (here: this thread) changes the store: during the indexing itself, or while the
    index is brought forward to the snapshots made meanwhile."""
    store = Store()
    store.replace([host("a", [1]), host("b", [2])])
    held = store.snapshot
    store.upsert(host("c", [3]))  # before the question: brought forward by the journal
    wrapper, reached, go = paused(getattr(ConsumerIndex, where))
    monkeypatch.setattr(ConsumerIndex, where, staticmethod(wrapper) if where == "of" else wrapper)
    worker = threading.Thread(target=lambda: store.views.consumers(held))
    worker.start()
    assert reached.wait(10)
    store.upsert(host("a", [1, 4]))  # while the worker indexes, or brings forward
    go.set()
    worker.join(10)
    assert not worker.is_alive()
    assert store.views.indexes_consumers(store.snapshot)
    assert store.views.consumers(store.snapshot).hosts(uuid_of(4)) == ("a",)
    assert_reads_as_fresh(store, store.snapshot)
    assert list(store.views.consumers(held)) == [uuid_of(1), uuid_of(2)]
