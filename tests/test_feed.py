"""The change feed: every commit to every event stream, in order, bounded per subscriber."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from gateway.store.feed import TURN, Commit, Feed, Lagging
from gateway.store.snapshot import Change, Snapshot
from gateway.store.store import Store
from tests.objects import hypervisor


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


async def test_subscribers_behind_go_through_the_commits_together() -> None:
    """Each reads a turn's worth of its backlog, then lets the others read theirs: all
    the subscribers of a change come to it close together, and share what is made of
    it; and each reads many commits a turn of the loop, not one."""
    store = Store()
    feed = Feed(store, queue_limit=4 * TURN)
    feed.start()
    order: list[tuple[str, int]] = []

    async def read(name: str, stream: AsyncIterator[Commit[Snapshot, Change]]) -> None:
        for _ in range(3 * TURN):
            commit = await anext(stream)
            order.append((name, int(commit.changes[0].hypervisor.resource_version or 0)))

    with feed.changes() as a, feed.changes() as b:
        changed(store, range(1, 3 * TURN + 1))  # both three turns behind
        await asyncio.gather(read("a", a), read("b", b))
    feed.stop()
    ahead = max(abs(sum(n == "a" for n, _ in order[:k]) * 2 - k) for k in range(len(order)))
    assert TURN - 1 <= ahead <= TURN  # a turn apart at most, and many commits a turn
    for name in "ab":
        assert [v for n, v in order if n == name] == list(range(1, 3 * TURN + 1))


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
