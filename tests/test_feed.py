"""The change feed: every commit to every event stream, in order, bounded per subscriber."""

from __future__ import annotations

import pytest

from gateway.store.feed import Feed, Lagging
from gateway.store.store import Store
from tests.objects import hypervisor
from tests.support import loop_turns


def changed(store: Store, versions: range) -> None:
    for version in versions:
        store.upsert(hypervisor("node-1", resource_version=str(version)))


async def test_every_commit_reaches_every_stream_in_order() -> None:
    store = Store()
    feed = Feed(store)
    feed.start()
    with feed.changes() as first, feed.changes() as second:
        changed(store, range(1, 6))
        for stream in (first, second):
            versions = [(await anext(stream)).changes[0].hypervisor.resource_version]
            versions += [(await anext(stream)).changes[0].hypervisor.resource_version]
            assert versions == ["1", "2"]
    feed.stop()


async def test_a_subscriber_behind_reads_its_backlog_in_one_turn_of_the_loop() -> None:
    """However slowly the loop turns, a subscriber keeps pace with the store: it takes
    every commit queued for it before it lets the loop turn."""
    store = Store()
    feed = Feed(store)
    feed.start()
    with feed.changes() as stream:
        changed(store, range(1, 201))
        async with loop_turns() as turns:
            before = turns()
            versions = [
                (await anext(stream)).changes[0].hypervisor.resource_version for _ in range(200)
            ]
            assert turns() == before
        assert versions == [str(n) for n in range(1, 201)]
    feed.stop()


async def test_a_subscriber_too_far_behind_is_cut_off_and_told_at_once() -> None:
    store = Store()
    feed = Feed(store, queue_limit=3)
    feed.start()
    told: list[bool] = []
    with feed.changes(on_lag=lambda: told.append(True)) as stream:
        changed(store, range(1, 5))
        assert told == [True]
        with pytest.raises(Lagging, match="more than 3 updates behind"):
            await anext(stream)
    feed.stop()
