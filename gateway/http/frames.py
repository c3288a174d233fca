"""WebSocket frames written together, and compressed only when it pays.

Written together: one write per connection every few milliseconds.

uvicorn writes every frame to its connection's transport at once, and asyncio sends
a write straight to the socket when nothing is buffered: a system call per message,
whose cost the kernel's TCP work makes tens of microseconds on loopback. At 20,000
hosts and 100 changes a second, the 2,000 messages a second of 20 ``hypervisorChanged``
subscribers spent 13% of the gateway's samples in those writes alone (82 µs each), more
than decoding and applying the changes did, and half of what the subscriptions cost.

Here the frames for a connection are kept for :data:`FLUSH_AFTER` after the first of
them, then written at once. The messages of one connection then cost one write per
10 ms however many changes they carry: a subscriber of every change gets 3 of them a
write at 333 changes a second, 10 at 1,000. A message waits 10 ms at most, a tenth of
what a change may take to be served (and far less than a browser draws a frame in).

Written past the app: a message of a broadcast (gateway.http.broadcast) went to
each subscriber from a task of its own, through Starlette's WebSocket, the app's
middleware and uvicorn's ASGI ``send``, each adding its await: at 20,000 hosts and
333 changes a second, 20 subscribers' 6,650 frames a second spent 14% of the
gateway's samples there (~10 µs a frame). The protocol here offers, in the
connection's scope (:data:`WRITE_TEXT`), to write a message's text at once, as
``send`` would; the broadcast writes each subscriber's frame with it, and queues
it only while the connection's writes are paused. It also offers (:data:`ABORT`) to
drop the connection: a close frame waits behind every byte the client has not read,
and ``send`` waits, for ever if the client reads nothing, until those are written.

Framed here: a message that goes plain (below :data:`COMPRESS_FROM`, or to a client
that did not ask for compression) on an open connection is a text frame's two to ten
bytes of header before the text (:func:`text_frame`), written without websockets'
frame objects, extension hooks and buffer. At 20,000 hosts and 333 changes a second
the 6,660 frames a second took 53 ms of a core in ``write_text`` through websockets
(8 µs a frame), 28 ms so (py-spy, 40 s at 200 Hz under ``bench.ceiling``).

Compressed only when it pays: browsers and most clients offer permessage-deflate,
and each connection then has a compressor of its own, so the same message sent to
twenty subscribers is compressed twenty times. For a message of a few hundred
bytes (a change of one host) that was ~10 µs of a core each, the largest single
cost of sending it, to save some hundred bytes. RFC 7692 lets a sender leave any
message uncompressed (its first frame's RSV1 bit says which), and the compressor's
state does not see it, so messages below :data:`COMPRESS_FROM` bytes go as they
are and larger ones are compressed as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import struct
from collections.abc import Sequence
from typing import Any, cast

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidState
from websockets.extensions.base import Extension, ServerExtensionFactory
from websockets.extensions.permessage_deflate import ServerPerMessageDeflateFactory
from websockets.frames import Frame, Opcode
from websockets.http11 import Request
from websockets.protocol import State
from websockets.typing import ExtensionParameter

__all__ = [
    "ABORT",
    "COMPRESS_FROM",
    "FLUSH_AFTER",
    "WRITE_TEXT",
    "CoalescingTransport",
    "CoalescingWebSocketProtocol",
    "SmallUncompressed",
    "text_frame",
]

#: Seconds a connection's first unsent frame waits for others to go with it.
FLUSH_AFTER = 0.010
#: Bytes from which a message is compressed, where the client accepts compression.
COMPRESS_FROM = 512
#: The scope extension by which a connection offers, as its ``write``, to write a
#: message's text at once (:meth:`CoalescingWebSocketProtocol.write_text`).
WRITE_TEXT = "gateway.websocket.write_text"
#: The scope extension by which a connection offers, as its ``abort``, to drop the
#: connection now, unsent frames and all (:meth:`CoalescingWebSocketProtocol.abort`).
ABORT = "gateway.websocket.abort"
#: A text frame's first byte: FIN and the text opcode.
_FIN_TEXT = 0x80 | Opcode.TEXT


class CoalescingTransport:
    """A transport whose writes within ``flush_after`` seconds of the first reach the
    socket as one.

    Everything but writing and closing is the wrapped transport's own: flow control
    (its buffer, pause and resume) still sees every byte, a moment later.
    """

    def __init__(
        self,
        transport: asyncio.Transport,
        loop: asyncio.AbstractEventLoop,
        flush_after: float = FLUSH_AFTER,
    ) -> None:
        self._transport = transport
        self._loop = loop
        self.flush_after = flush_after
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._pending:
            self._loop.call_later(self.flush_after, self._flush)
        self._pending.append(bytes(data))

    def is_closing(self) -> bool:
        return self._transport.is_closing()  # asked before every frame: not by __getattr__

    def close(self) -> None:
        """Close after what was written (the close frame among it) is sent."""
        self._flush()
        self._transport.close()

    def abort(self) -> None:
        self._pending.clear()
        self._transport.abort()

    def _flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class SmallUncompressed(Extension):
    """A negotiated permessage-deflate that sends messages below ``compress_from``
    bytes uncompressed; what it receives, it decodes as the extension does."""

    def __init__(self, deflate: Extension, compress_from: int = COMPRESS_FROM) -> None:
        self.deflate = deflate
        self.name = deflate.name
        self.compress_from = compress_from

    def decode(self, frame: Frame, *, max_size: int | None = None) -> Frame:
        return self.deflate.decode(frame, max_size=max_size)

    def encode(self, frame: Frame) -> Frame:
        # uvicorn sends each message as one frame: a whole message's length is known.
        whole = frame.fin and frame.opcode in (Opcode.TEXT, Opcode.BINARY)
        if whole and len(frame.data) < self.compress_from:
            return frame
        return self.deflate.encode(frame)


class _Negotiating(ServerExtensionFactory):
    """uvicorn's permessage-deflate offer, its extension wrapped in :class:`SmallUncompressed`."""

    def __init__(self, factory: ServerExtensionFactory) -> None:
        self.factory = factory
        self.name = factory.name

    def process_request_params(
        self, params: Sequence[ExtensionParameter], accepted_extensions: Sequence[Extension]
    ) -> tuple[list[ExtensionParameter], Extension]:
        response, extension = self.factory.process_request_params(params, accepted_extensions)
        return response, SmallUncompressed(extension)


class CoalescingWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol (the one it picks itself), writing through a
    :class:`CoalescingTransport`, compressing only messages of :data:`COMPRESS_FROM`
    bytes or more, offering :meth:`write_text` and :meth:`abort` to the app."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn.available_extensions = [
            _Negotiating(f) if isinstance(f, ServerPerMessageDeflateFactory) else f
            for f in self.conn.available_extensions or ()
        ]

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        coalescing = CoalescingTransport(cast("asyncio.Transport", transport), self.loop)
        super().connection_made(cast("asyncio.Transport", coalescing))

    def handle_connect(self, event: Request) -> None:
        super().handle_connect(event)
        if not self.close_sent:  # accepted: the app is about to run with this scope
            self.scope["extensions"][WRITE_TEXT] = {"write": self.write_text}
            self.scope["extensions"][ABORT] = {"abort": self.abort}

    async def send(self, message: Any) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body"):
            # A denial response (a full server's 503, a refused origin) ends the
            # handshake; uvicorn leaves it unfinished and, as the app returns, logs
            # an ERROR for every refused client.
            self.handshake_complete = True

    def abort(self) -> None:
        """Drop the connection, unless it is gone: the app then reads a disconnect, and
        a ``send`` waiting for the client to read raises."""
        if not self.disconnected:
            self.transport.abort()

    def write_text(self, text: str) -> bool:
        """Send ``text`` as a message now, as the ASGI ``send`` would; False while the
        transport's buffer is full (the caller is to wait, as ``send`` does).

        On a connection closing or gone the message is dropped, where ``send`` would
        raise: its end ends what writes to it.
        """
        if not self.writable.is_set():
            return False
        if not (self.close_sent or self.disconnected or self.transport.is_closing()):
            data = text.encode()
            if self._plain(len(data)):
                self.transport.write(text_frame(data))
            else:
                with contextlib.suppress(InvalidState):
                    self.conn.send_text(data)
                    self.transport.write(b"".join(self.conn.data_to_send()))
        return True

    def _plain(self, length: int) -> bool:
        """Whether a message of ``length`` bytes goes as it is, between whole messages
        of an open connection: then it is framed here (:func:`text_frame`)."""
        conn = self.conn
        return (
            conn.state is State.OPEN  # first: the extensions are known once it is open
            and length < self._plain_below
            and not conn.expect_continuation_frame
        )

    @functools.cached_property
    def _plain_below(self) -> float:
        """The length from which a message goes through websockets and the extension
        negotiated: never without one, from :data:`COMPRESS_FROM` with
        permessage-deflate, always with another."""
        extensions = self.conn.extensions
        if not extensions:
            return math.inf
        if len(extensions) == 1 and isinstance(extensions[0], SmallUncompressed):
            return extensions[0].compress_from
        return 0


def text_frame(data: bytes) -> bytes:
    """A whole text message as a server frames it (RFC 6455, 5.2): final, no
    extension's bits, unmasked, its length in 7, 16 or 64 bits."""
    length = len(data)
    if length < 126:
        return bytes((_FIN_TEXT, length)) + data
    if length < 65536:
        return struct.pack("!BBH", _FIN_TEXT, 126, length) + data
    return struct.pack("!BBQ", _FIN_TEXT, 127, length) + data
