"""One run of an event subscription for all its subscribers: over real WebSockets,
and in process where the order of the loop's turns decides what a test shows."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from graphql import GraphQLError, parse

from gateway.api.context import Context
from gateway.api.schema import schema
from gateway.http.broadcast import Broadcast, Broadcasts, Member, send_frames
from gateway.store.feed import Feed
from gateway.store.source import SyncStatus
from gateway.store.store import Store
from tests import fleet
from tests.objects import hypervisor
from tests.support import eventually, listening, run_server
from tests.test_subscriptions import LEGACY_WS, TRANSPORT_WS, connect, modified

HOSTS = "subscription { hypervisorChanged { type hypervisor { name resourceVersion } } }"


async def gauges(
    address: str, names: tuple[str, ...] = ("subscription_streams", "subscription_broadcasts")
) -> dict[str, float]:
    async with httpx.AsyncClient(base_url=f"http://{address}") as client:
        text = (await client.get("/metrics")).text
    found = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name.removeprefix("hypervisor_gateway_") in names:
            found[name.removeprefix("hypervisor_gateway_")] = float(value)
    return found


async def test_subscribers_of_one_operation_share_one_run_in_both_protocols() -> None:
    """Each gets the change in its own protocol's message, under its own id; the
    metrics count three subscribers of one broadcast, and none once they left."""
    async with run_server(fleet.objects()) as (address, store):
        async with contextlib.AsyncExitStack() as stack:
            clients = []
            for number, protocol in enumerate((TRANSPORT_WS, LEGACY_WS, TRANSPORT_WS)):
                client = await stack.enter_async_context(
                    contextlib.asynccontextmanager(connect)(address, protocol)
                )
                await client.subscribe(f"op-{number}", HOSTS)
                clients.append(client)
            await listening(address, streams=3)
            assert await gauges(address) == {
                "subscription_streams": 3.0,
                "subscription_broadcasts": 1.0,
            }
            store.upsert(modified("node-a", "10"))
            messages = [await client.receive() for client in clients]
        change = {"type": "MODIFIED", "hypervisor": {"name": "node-a", "resourceVersion": "10"}}
        payload = {"data": {"hypervisorChanged": change}}
        assert messages == [
            {"id": "op-0", "type": "next", "payload": payload},
            {"id": "op-1", "type": "data", "payload": payload},
            {"id": "op-2", "type": "next", "payload": payload},
        ]

        async def gone() -> bool:
            stopped = {"subscription_streams": 0.0, "subscription_broadcasts": 0.0}
            return await gauges(address) == stopped

        await eventually(gone)
        assert store is not None


async def test_a_subscriber_that_completes_leaves_the_others_theirs() -> None:
    async with run_server(fleet.objects()) as (address, store):
        async for staying in connect(address, TRANSPORT_WS):
            async for leaving in connect(address, LEGACY_WS):
                await staying.subscribe("a", HOSTS)
                await leaving.subscribe("b", HOSTS)
                await listening(address, streams=2)
                await leaving.send({"id": "b", "type": "stop"})
                assert (await leaving.receive())["type"] == "complete"
                await listening(address, streams=1)
                store.upsert(modified("node-a", "11"))
                got = await staying.next()
                assert got["hypervisorChanged"]["hypervisor"]["resourceVersion"] == "11"


# In process: a real store, the app's schema, Broadcasts as the server runs them.


class Connection:
    """A subscriber's side: its context, and what its connection was told."""

    def __init__(self, store: Store, feed: Feed) -> None:
        self.cut_off = 0
        self.context = Context(store, SyncStatus("test"), feed, pinned=False, on_lag=self._lag)

    def _lag(self) -> None:
        self.cut_off += 1


@pytest.fixture
async def live() -> AsyncIterator[tuple[Store, Feed, list[str]]]:
    store = Store()
    store.replace([hypervisor(f"node-{n}", resource_version="1") for n in range(3)], "1")
    feed = Feed(store, queue_limit=8)
    feed.start()
    logged: list[str] = []
    yield store, feed, logged
    feed.stop()


def versions(frames: list[str]) -> list[str]:
    changes = [json.loads(f)["payload"]["data"]["hypervisorChanged"] for f in frames]
    return [c["hypervisor"]["resourceVersion"] for c in changes]


async def started(broadcasts: Broadcasts, context: Context, query: str = HOSTS) -> Broadcast:
    found = await broadcasts.start(query, parse(query), None, None, context)
    assert isinstance(found, Broadcast), found
    return found


@contextlib.contextmanager
def joined(
    broadcasts: Broadcasts, broadcast: Broadcast, *connections: Connection
) -> Iterator[list[Member]]:
    """Each connection's subscriber in ``broadcast``, with ids 0, 1, ..."""
    with contextlib.ExitStack() as stack:
        yield [
            stack.enter_context(broadcasts.member(broadcast, c.context, f'{{"id":"{n}","payload":'))
            for n, c in enumerate(connections)
        ]


def warned(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the broadcasts logged."""
    return [r.getMessage() for r in caplog.records if r.name == "gateway.http.broadcast"]


async def take(member: Member, count: int) -> list[str]:
    frames: list[str] = []
    async for frame in member.frames():
        frames.append(frame)
        if len(frames) == count:
            break
    return frames


def broadcasts_of(logged: list[str], queue_limit: int = 8) -> Broadcasts:
    """Broadcasts whose events' errors are kept in ``logged`` as they are masked."""

    def mask(errors: list[GraphQLError]) -> list[GraphQLError]:
        logged.extend(str(e) for e in errors)
        return errors

    return Broadcasts(schema._schema, mask, queue_limit)


async def test_a_subscriber_joining_behind_the_source_gets_only_later_changes(
    live: tuple[Store, Feed, list[str]],
) -> None:
    """The source has changes queued from before the second subscriber came: those
    are the first's alone, whatever the source has made of them by then."""
    store, feed, logged = live
    broadcasts = broadcasts_of(logged)
    first, second = Connection(store, feed), Connection(store, feed)
    broadcast = await started(broadcasts, first.context)
    with broadcasts.member(broadcast, first.context, '{"id":"1","payload":') as early:
        store.upsert(hypervisor("node-0", resource_version="2"))
        store.upsert(hypervisor("node-1", resource_version="3"))
        with broadcasts.member(broadcast, second.context, '{"id":"2","payload":') as late:
            store.upsert(hypervisor("node-2", resource_version="4"))
            assert versions(await take(early, 3)) == ["2", "3", "4"]
            assert versions(await take(late, 1)) == ["4"]
    assert logged == []


async def test_a_broadcast_keeps_nothing_of_its_events_for_other_operations(
    live: tuple[Store, Feed, list[str]],
) -> None:
    """An event's result, and the objects in it, are its members' alone: kept in the
    store's memos they were work for nothing, and pushed out what queries reuse."""
    store, feed, logged = live
    broadcasts = broadcasts_of(logged)
    connection = Connection(store, feed)
    answers = connection.context.answers
    broadcast = await started(broadcasts, connection.context)
    with broadcasts.member(broadcast, connection.context, '{"id":"1","payload":') as member:
        for version in range(2, 5):
            store.upsert(hypervisor(f"node-{version}", resource_version=str(version)))
        assert versions(await take(member, 3)) == ["2", "3", "4"]
    assert (len(answers.results), len(answers.completed)) == (0, 0)
    assert logged == []


async def test_a_member_too_far_behind_is_cut_off_and_the_others_go_on(
    live: tuple[Store, Feed, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    store, feed, logged = live
    broadcasts = broadcasts_of(logged, queue_limit=3)
    reading, stalled = Connection(store, feed), Connection(store, feed)
    broadcast = await started(broadcasts, reading.context)
    with joined(broadcasts, broadcast, reading, stalled) as (reader, behind):
        got: list[str] = []
        for version in range(2, 8):
            store.upsert(hypervisor("node-0", resource_version=str(version)))
            got += await take(reader, 1)
        assert versions(got) == ["2", "3", "4", "5", "6", "7"]
        assert (stalled.cut_off, reading.cut_off) == (1, 0)
        assert [frame async for frame in behind.frames()] == []  # ended, its backlog dropped
        assert behind not in broadcast.members or behind.ended
    assert warned(caplog) == [
        "a subscriber of every change has 3 messages (309 bytes) unsent (its client reads "
        "too slowly): closing its connection (1013)"
    ]


async def test_the_last_member_leaving_stops_the_source(
    live: tuple[Store, Feed, list[str]],
) -> None:
    store, feed, logged = live
    broadcasts = broadcasts_of(logged)
    connection = Connection(store, feed)
    broadcast = await started(broadcasts, connection.context)
    assert (feed.subscribers, len(broadcasts)) == (1, 1)
    with broadcasts.member(broadcast, connection.context, '{"id":"1","payload":'):
        assert broadcasts.members == 1
    assert broadcast.task is not None
    with contextlib.suppress(asyncio.CancelledError):
        await broadcast.task
    assert (feed.subscribers, len(broadcasts), broadcasts.members) == (0, 0, 0)
    again = await started(broadcasts, connection.context)
    assert again is not broadcast


async def test_a_source_behind_the_store_cuts_off_every_member(
    live: tuple[Store, Feed, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    """More commits than the feed queues before the source reads one: nobody can be
    told every change, so every subscriber is told to reconnect (1013), and sent
    nothing more."""
    store, feed, logged = live
    broadcasts = broadcasts_of(logged)
    one, two = Connection(store, feed), Connection(store, feed)
    broadcast = await started(broadcasts, one.context)
    with joined(broadcasts, broadcast, one, two) as (first, second):
        for version in range(2, 2 + 10):  # the feed queues 8
            store.upsert(hypervisor("node-0", resource_version=str(version)))
        assert [frame async for frame in first.frames()] == []
        assert [frame async for frame in second.frames()] == []
    assert (one.cut_off, two.cut_off) == (1, 1)
    assert warned(caplog) == [
        "a broadcast fell 8 changes behind the store: closing the connections of its 2 "
        "subscribers (1013)"
    ]


async def test_variables_that_do_not_coerce_start_nothing(
    live: tuple[Store, Feed, list[str]],
) -> None:
    store, feed, logged = live
    broadcasts = broadcasts_of(logged)
    query = "subscription($zone: String) { hypervisorChanged(filter: {zone: $zone}) { type } }"
    context = Connection(store, feed).context
    failed = await broadcasts.start(query, parse(query), {"zone": 7}, None, context)
    assert not isinstance(failed, Broadcast)
    assert failed.errors is not None and "zone" in str(failed.errors[0])
    assert (feed.subscribers, len(broadcasts)) == (0, 0)


async def test_a_source_that_fails_tells_every_member_once(
    live: tuple[Store, Feed, list[str]],
) -> None:
    """A filter the resolver refuses (an unknown flavor) is an error message for each
    subscriber, the same text, logged once."""
    store, feed, logged = live
    broadcasts = broadcasts_of(logged)
    query = """subscription { hypervisorChanged(filter: {fitsFlavor: "no-such"})
        { type } }"""
    context = Connection(store, feed).context
    found = await started(broadcasts, context, query)
    with broadcasts.member(found, context, '{"id":"1","payload":') as member:
        frames = [frame async for frame in member.frames()]
    assert len(frames) == 1
    message: dict[str, Any] = json.loads(frames[0])
    assert message["payload"]["data"] is None
    assert "no-such" in message["payload"]["errors"][0]["message"]
    assert len(logged) == 1


async def test_a_member_with_too_many_bytes_unsent_is_cut_off(
    live: tuple[Store, Feed, list[str]],
) -> None:
    """Large messages cut a slow subscriber off before a thousand of them: its backlog
    is bounded in bytes too, and the bytes it holds go as it sends them."""
    store, feed, _ = live
    connection = Connection(store, feed)
    member = Member(connection.context, '{"id":"1","payload":', since=0, limit=100, max_bytes=10)
    member.put("123456")
    member.put("7890")
    assert member.pending_bytes == 10
    assert [frame async for frame in _first(member.frames(), 1)] == ['{"id":"1","payload":123456}']
    assert member.pending_bytes == 4
    member.put("abcdefg")  # 11 bytes unsent: over, but taken; the next one is not
    member.put("x")
    assert (connection.cut_off, member.ended, member.pending_bytes) == (1, True, 0)


async def test_a_member_is_written_at_once_but_never_ahead_of_a_frame_waiting(
    live: tuple[Store, Feed, list[str]],
) -> None:
    """Its connection takes a frame at once unless its writes are paused; a frame
    that had to wait, queued or being sent, goes before any later one."""
    store, feed, _ = live
    written: list[str] = []
    writable = True

    def write(frame: str) -> bool:
        if writable:
            written.append(frame)
        return writable

    sent: list[str] = []
    release = asyncio.Event()

    async def send(frame: str) -> None:
        await release.wait()
        sent.append(frame)

    member = Member(Connection(store, feed).context, "<", since=0, limit=10, write=write)
    sending = asyncio.create_task(send_frames(member, send))
    member.put("1")
    writable = False
    member.put("2")  # its connection's writes paused: queued
    writable = True
    await eventually(lambda: member.pending_bytes == 0)  # taken off the queue, being sent
    member.put("3")  # behind the frame being sent: queued too
    release.set()
    await eventually(lambda: len(sent) == 2)
    member.put("4")  # nothing waits: written at once
    member.end()
    await sending
    assert (written, sent) == (["<1}", "<4}"], ["<2}", "<3}"])


async def _first(frames: AsyncIterator[str], count: int) -> AsyncIterator[str]:
    async for frame in frames:
        yield frame
        count -= 1
        if count == 0:
            return
