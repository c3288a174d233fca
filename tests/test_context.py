"""The resolvers' context: which snapshot a request sees."""

from __future__ import annotations

import pytest

from gateway.api.budget import Budget, Offload
from gateway.api.context import Context
from gateway.store.feed import Feed
from gateway.store.source import SyncStatus
from gateway.store.store import Store
from tests.objects import hypervisor


def context(store: Store, *, pinned: bool) -> Context:
    return Context(store, SyncStatus("test"), Feed(store), pinned=pinned)


def test_a_pinned_empty_snapshot_stays_pinned() -> None:
    # An empty Snapshot is falsy (it has a length): the pin must not depend on it.
    store = Store()
    pinned = context(store, pinned=True)
    empty = store.snapshot
    store.replace([hypervisor("node-1")])
    assert pinned.snapshot is empty
    assert len(pinned.snapshot) == 0


def test_a_pinned_snapshot_ignores_later_changes() -> None:
    store = Store()
    store.replace([hypervisor("node-1")])
    pinned = context(store, pinned=True)
    store.replace([hypervisor("node-1"), hypervisor("node-2")])
    assert len(pinned.snapshot) == 1


def test_an_unpinned_context_follows_the_store() -> None:
    store = Store()
    following = context(store, pinned=False)
    store.replace([hypervisor("node-1")])
    assert following.snapshot is store.snapshot
    assert len(following.snapshot) == 1


def test_for_operation_pins_the_current_snapshot() -> None:
    store = Store()
    operation = context(store, pinned=False).for_operation()
    current = store.snapshot
    store.replace([hypervisor("node-1")])
    assert operation.snapshot is current


@pytest.mark.parametrize("ordered", [False, True])
def test_the_first_index_of_the_consumers_is_not_made_on_the_event_loop(ordered: bool) -> None:
    """A lookup runs on the loop; indexing every booking for it must go to a thread,
    and so must the first order of the UUIDs, for a page of them."""
    store = Store()
    store.replace([hypervisor("node-1", spec={"bookings": []})])
    inline = context(store, pinned=True)
    inline.budget = Budget(60.0, 10**9)
    inline.budget.inline = True
    with pytest.raises(Offload):
        inline.consumers(ordered=ordered)
    assert list(context(store, pinned=True).consumers(ordered=ordered)) == []  # in a thread
    assert len(inline.consumers(ordered=ordered)) == 0  # now kept: read on the loop
