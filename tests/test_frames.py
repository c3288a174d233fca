"""WebSocket frames written together: one write per connection every few milliseconds."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import websockets

from gateway.http.frames import CoalescingTransport, CoalescingWebSocketProtocol
from gateway.http.server import config
from tests.objects import hypervisor
from tests.support import eventually, listening, run_server


class Counted:
    """A real transport, its writes counted on the way to the socket."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)
        self.transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


@pytest.fixture
async def connection() -> AsyncIterator[tuple[Counted, asyncio.StreamReader]]:
    """A loopback TCP connection: the writing side's transport, the reading side."""
    accepted: asyncio.Queue[asyncio.StreamReader] = asyncio.Queue()

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accepted.put(reader)

    server = await asyncio.start_server(on_client, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_connection(asyncio.Protocol, "127.0.0.1", port)
    reader = await accepted.get()
    yield Counted(transport), reader
    transport.close()
    server.close()
    await server.wait_closed()


def coalescing(counted: Counted, flush_after: float = 0.0) -> CoalescingTransport:
    loop = asyncio.get_running_loop()
    return CoalescingTransport(counted, loop, flush_after)  # type: ignore[arg-type]


async def next_turn() -> None:
    """Let the loop finish its turn, and the one after (a flush after 0 s is due then)."""
    await asyncio.sleep(0)
    await asyncio.sleep(0)


async def test_frames_within_the_wait_are_one_write_in_order(
    connection: tuple[Counted, asyncio.StreamReader],
) -> None:
    counted, reader = connection
    transport = coalescing(counted, flush_after=0.05)
    for frame in (b"one,", b"two,", bytearray(b"three,")):
        transport.write(frame)
    await next_turn()
    assert counted.writes == []  # not before the wait is over
    await eventually(lambda: counted.writes == [b"one,two,three,"])
    transport.write(b"four")
    await eventually(lambda: len(counted.writes) == 2)
    assert counted.writes[1] == b"four"  # after the wait: a write of its own
    assert await reader.readexactly(len(b"one,two,three,four")) == b"one,two,three,four"


async def test_closing_sends_what_was_written_first(
    connection: tuple[Counted, asyncio.StreamReader],
) -> None:
    counted, reader = connection
    transport = coalescing(counted)
    transport.write(b"last frame")
    transport.close()  # as uvicorn closes after its close frame
    assert await reader.read() == b"last frame"  # then the end of the stream
    await next_turn()
    assert counted.writes == [b"last frame"]  # and the flush then scheduled finds nothing


async def test_an_aborted_connection_sends_nothing_more(
    connection: tuple[Counted, asyncio.StreamReader],
) -> None:
    counted, reader = connection
    transport = coalescing(counted)
    transport.write(b"never sent")
    transport.abort()
    await next_turn()
    assert counted.writes == []
    assert await reader.read() == b""


async def test_everything_else_is_the_transports_own(
    connection: tuple[Counted, asyncio.StreamReader],
) -> None:
    counted, _ = connection
    transport = coalescing(counted)
    assert transport.get_extra_info("peername") == counted.transport.get_extra_info("peername")
    assert transport.is_closing() is False


def test_the_server_speaks_websocket_through_it() -> None:
    assert config(object(), host="127.0.0.1", port=0).ws is CoalescingWebSocketProtocol


async def test_a_subscriber_gets_every_change_of_a_burst_in_order() -> None:
    """A burst of changes reaches the subscriber in few writes, every one in order."""
    hosts = [hypervisor(f"node-{n}", resource_version="1") for n in range(3)]
    async with (
        run_server(hosts) as (address, store),
        websockets.connect(
            f"ws://{address}/graphql", subprotocols=[websockets.Subprotocol("graphql-transport-ws")]
        ) as ws,
    ):
        await ws.send(json.dumps({"type": "connection_init"}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        query = "subscription { hypervisorChanged { hypervisor { name resourceVersion } } }"
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": query}}))
        await listening(address)
        for version in range(2, 12):
            for n in range(3):
                store.upsert(hypervisor(f"node-{n}", resource_version=str(version)))
        seen = []
        for _ in range(30):
            message = json.loads(await ws.recv())
            host = message["payload"]["data"]["hypervisorChanged"]["hypervisor"]
            seen.append((host["name"], host["resourceVersion"]))
    assert seen == [(f"node-{n}", str(v)) for v in range(2, 12) for n in range(3)]
