"""WebSocket frames written together: one write per connection every few milliseconds;
and compressed only from COMPRESS_FROM bytes."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
import websockets
from websockets.extensions.base import Extension
from websockets.extensions.permessage_deflate import (
    ClientPerMessageDeflateFactory,
    PerMessageDeflate,
)
from websockets.frames import Frame, Opcode
from websockets.typing import ExtensionParameter

from gateway.http.frames import (
    COMPRESS_FROM,
    CoalescingTransport,
    CoalescingWebSocketProtocol,
    SmallUncompressed,
    text_frame,
)
from gateway.http.server import config
from gateway.store.store import Store
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


@contextlib.asynccontextmanager
async def subscribed(
    hosts: list[dict[str, Any]],
    fields: str = "name resourceVersion",
    **options: Any,
) -> AsyncIterator[tuple[websockets.ClientConnection, Store]]:
    """A client of the real server, subscribed to these ``fields`` of every host's
    changes (``options``: websockets.connect's)."""
    protocols = [websockets.Subprotocol("graphql-transport-ws")]
    async with (
        run_server(hosts) as (address, store),
        websockets.connect(f"ws://{address}/graphql", subprotocols=protocols, **options) as ws,
    ):
        await ws.send(json.dumps({"type": "connection_init"}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        query = f"subscription {{ hypervisorChanged {{ hypervisor {{ {fields} }} }} }}"
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": query}}))
        await listening(address)
        yield ws, store


async def test_a_subscriber_gets_every_change_of_a_burst_in_order() -> None:
    """A burst of changes reaches the subscriber in few writes, every one in order."""
    hosts = [hypervisor(f"node-{n}", resource_version="1") for n in range(3)]
    async with subscribed(hosts) as (ws, store):
        for version in range(2, 12):
            for n in range(3):
                store.upsert(hypervisor(f"node-{n}", resource_version=str(version)))
        seen = []
        for _ in range(30):
            message = json.loads(await ws.recv())
            host = message["payload"]["data"]["hypervisorChanged"]["hypervisor"]
            seen.append((host["name"], host["resourceVersion"]))
    assert seen == [(f"node-{n}", str(v)) for v in range(2, 12) for n in range(3)]


async def test_a_broadcast_writes_its_frames_past_the_apps_send(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The subscriber's messages reach it, in order, without a trip each through the
    app's ASGI send (the protocol messages do take it)."""
    through_send: list[str] = []
    asgi_send = CoalescingWebSocketProtocol.send

    async def send(self: CoalescingWebSocketProtocol, message: Any) -> None:
        if message["type"] == "websocket.send":
            through_send.append(json.loads(message["text"])["type"])
        await asgi_send(self, message)

    monkeypatch.setattr(CoalescingWebSocketProtocol, "send", send)
    async with subscribed([hypervisor("node-0", resource_version="1")]) as (ws, store):
        for version in range(2, 5):
            store.upsert(hypervisor("node-0", resource_version=str(version)))
        seen = [json.loads(await ws.recv())["payload"]["data"] for _ in range(3)]
    versions = [data["hypervisorChanged"]["hypervisor"]["resourceVersion"] for data in seen]
    assert (versions, through_send) == (["2", "3", "4"], ["connection_ack"])


# Compression: only messages of COMPRESS_FROM bytes or more.


def deflate_pair() -> tuple[SmallUncompressed, PerMessageDeflate]:
    """The server's extension as negotiated with context takeover, and a client's."""
    server = PerMessageDeflate(False, False, 12, 12, {"memLevel": 5})
    return SmallUncompressed(server), PerMessageDeflate(False, False, 12, 12)


def test_small_messages_go_uncompressed_and_the_peer_keeps_decoding() -> None:
    """A message left plain is not fed to the compressor, whose state the peer's
    decompressor shares: the compressed messages around it still decode."""
    sending, receiving = deflate_pair()
    large = json.dumps([{"name": f"node-{n}", "zone": "qa-de-1a"} for n in range(40)])
    small = json.dumps({"id": "1", "type": "next", "payload": {"data": None}})
    assert len(large) >= COMPRESS_FROM > len(small)
    for text in (large, small, large, small, large):
        frame = sending.encode(Frame(Opcode.TEXT, text.encode()))
        assert frame.rsv1 is (text is large)
        assert len(frame.data) < len(text) if text is large else frame.data == text.encode()
        assert receiving.decode(frame).data.decode() == text


def test_control_frames_and_fragments_are_the_extensions_own() -> None:
    sending, _ = deflate_pair()
    ping = Frame(Opcode.PING, b"x")
    assert sending.encode(ping) is ping
    part = sending.encode(Frame(Opcode.TEXT, b"x" * 10, fin=False))
    assert part.rsv1  # a fragment's message may be long: compressed as before


class Recorded(Extension):
    """A client's permessage-deflate that notes whether each message came compressed."""

    def __init__(self, deflate: Extension, compressed: list[bool]) -> None:
        self.deflate, self.name, self.compressed = deflate, deflate.name, compressed

    def decode(self, frame: Frame, *, max_size: int | None = None) -> Frame:
        if frame.opcode in (Opcode.TEXT, Opcode.BINARY):
            self.compressed.append(frame.rsv1)
        return self.deflate.decode(frame, max_size=max_size)

    def encode(self, frame: Frame) -> Frame:
        return self.deflate.encode(frame)


class Recording(ClientPerMessageDeflateFactory):
    def __init__(self) -> None:
        super().__init__()
        self.compressed: list[bool] = []

    def process_response_params(
        self, params: Sequence[ExtensionParameter], accepted_extensions: Sequence[Extension]
    ) -> Extension:
        deflate = super().process_response_params(params, accepted_extensions)
        return Recorded(deflate, self.compressed)


async def test_a_client_offering_compression_gets_small_messages_plain() -> None:
    """websockets' own client negotiates permessage-deflate with the real server: the
    acknowledgement, a change of one host and a completion come plain, a large answer
    compressed."""
    hosts = [hypervisor(f"node-{n}", resource_version="1") for n in range(30)]
    recording = Recording()
    async with subscribed(hosts, compression=None, extensions=[recording]) as (ws, store):
        store.upsert(hypervisor("node-0", resource_version="2"))
        change = json.loads(await ws.recv())
        fleet = "{ hypervisors(first: 30) { nodes { name zone resourceVersion } } }"
        await ws.send(json.dumps({"id": "2", "type": "subscribe", "payload": {"query": fleet}}))
        answer = await ws.recv()
        assert json.loads(await ws.recv())["type"] == "complete"
    assert change["payload"]["data"]["hypervisorChanged"]["hypervisor"]["resourceVersion"] == "2"
    assert len(json.loads(answer)["payload"]["data"]["hypervisors"]["nodes"]) == 30
    assert len(answer) >= COMPRESS_FROM
    assert recording.compressed == [False, False, True, False]  # ack, change, answer, complete


@pytest.mark.parametrize("length", [0, 125, 126, 65535, 65536])
def test_a_text_frame_is_the_one_websockets_makes(length: int) -> None:
    data = b"x" * length
    assert text_frame(data) == Frame(Opcode.TEXT, data).serialize(mask=False)


async def test_a_broadcasts_large_message_still_goes_compressed() -> None:
    """Messages are framed past websockets only where they go plain: a change of
    COMPRESS_FROM bytes or more is compressed, and the client reads it whole."""
    labels = {f"example.com/label-{n}": "x" * 20 for n in range(40)}
    recording = Recording()
    host = hypervisor("node-0", resource_version="1")
    options = {"compression": None, "extensions": [recording]}
    async with subscribed([host], "labels { key value }", **options) as (ws, store):
        store.upsert(hypervisor("node-0", resource_version="2", labels=labels))
        store.upsert(hypervisor("node-0", resource_version="3"))
        large, small = [await ws.recv() for _ in range(2)]
    assert len(small) < COMPRESS_FROM <= len(large)
    changed = json.loads(large)["payload"]["data"]["hypervisorChanged"]["hypervisor"]
    assert {label["key"] for label in changed["labels"]} >= set(labels)
    assert recording.compressed == [False, True, False]  # ack, the large change, the small


async def test_a_client_without_compression_gets_a_large_change_plain_and_whole() -> None:
    labels = {f"example.com/label-{n}": "x" * 20 for n in range(40)}
    host = hypervisor("node-0", resource_version="1")
    async with subscribed([host], "labels { key value }", compression=None) as (ws, store):
        store.upsert(hypervisor("node-0", resource_version="2", labels=labels))
        large = await ws.recv()
    assert len(large) >= COMPRESS_FROM
    changed = json.loads(large)["payload"]["data"]["hypervisorChanged"]["hypervisor"]
    assert {label["key"] for label in changed["labels"]} >= set(labels)
