"""WebSocket frames written together: one write per connection every few milliseconds.

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
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

__all__ = ["FLUSH_AFTER", "CoalescingTransport", "CoalescingWebSocketProtocol"]

#: Seconds a connection's first unsent frame waits for others to go with it.
FLUSH_AFTER = 0.010


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


class CoalescingWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol (the one it picks itself), writing through a
    :class:`CoalescingTransport`."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        coalescing = CoalescingTransport(cast("asyncio.Transport", transport), self.loop)
        super().connection_made(cast("asyncio.Transport", coalescing))
