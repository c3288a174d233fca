"""Running the app under uvicorn, hardened against slow and idle clients.

uvicorn times out idle keep-alive connections but not a client that sends its
request headers slowly (slowloris): such connections would pile up for ever. The
protocol below gives every request a deadline for its headers and closes the
connection with a 408 when it passes. Nor does httptools bound the size of the
headers (it buffers a header until it ends, 50 MB or more): past
``MAX_HEADER_BYTES`` the connection is answered 431 and closed. Request bodies
are bounded in time by the GraphQL endpoint itself.

A request answered before its body was read (413, 415, 404, 421...) ends its
connection. uvicorn would keep it for another request, skipping the rest of the
body as it comes; but every chunk of it cancels the keep-alive timer and nothing
arms it again, so a client that stops sending would hold the connection for ever.

While it serves, the interpreter is handed from thread to thread more often
than Python's default (``SWITCH_SECONDS``): see :func:`switching`.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Iterator
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from gateway.http.frames import CoalescingWebSocketProtocol

__all__ = ["HEADER_TIMEOUT", "MAX_HEADER_BYTES", "SWITCH_SECONDS", "config", "switching"]

#: Seconds a client has to send a request's headers.
HEADER_TIMEOUT = 10.0
#: Seconds a closing connection is kept open to drain what the client still sends.
LINGER = 1.0
#: Bytes a request line and its headers may take together (h11's limit is the same).
MAX_HEADER_BYTES = 64 * 1024
#: Bytes parsed at a time: a request's head is counted from the start of the piece it began in.
PIECE = 8 * 1024
#: Longest a thread keeps the interpreter while another waits for it.
SWITCH_SECONDS = 0.001

_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 33\r\nconnection: close\r\n\r\nrequest headers sent too slowly\r\n"
)
_TOO_LARGE_RESPONSE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8"
    b"\r\ncontent-length: 36\r\nconnection: close\r\n\r\nrequest headers larger than 64 KiB\r\n"
)


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline and a size limit for request headers,
    which closes a connection once a request is answered with its body unread."""

    header_timeout = HEADER_TIMEOUT
    max_header_bytes = MAX_HEADER_BYTES

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._header_bytes = 0
        self._lingering = False
        self._arm()

    def data_received(self, data: bytes) -> None:
        """Parse ``data`` piece by piece, counting the bytes of a request's head.

        httptools tells when a request begins, not where in the data: a head is counted
        from the start of the piece it began in, so never short of itself, and with less
        than a piece of what came before it (a request pipelined behind another).
        """
        for start in range(0, len(data), PIECE):
            if self._lingering or self.transport.is_closing():
                return  # closed, as after a 400 from uvicorn
            if self.transport.get_protocol() is not self:
                return  # upgraded to WebSocket: uvicorn drops the rest too
            piece = data[start : start + PIECE]
            super().data_received(piece)
            self._header_bytes += len(piece)
            if self._deadline is not None and self._header_bytes > self.max_header_bytes:
                self._close(_TOO_LARGE_RESPONSE)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._header_bytes = 0
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        # self.cycle is the request answered, or one parsed after it, so after its body:
        # only the former can be complete with its body unread.
        unread = self.cycle.response_complete and self.cycle.more_body
        super().on_response_complete()
        if unread:
            self._close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.header_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._close(_TIMEOUT_RESPONSE)

    def _close(self, answer: bytes = b"") -> None:
        """Write ``answer`` and close; what the client still sends meanwhile is read and dropped.

        Closing a socket with unread data in it resets the connection, and the
        reset can destroy the answer before the client reads it.
        """
        self._disarm()
        if self.transport.is_closing() or self._lingering:
            return
        self._lingering = True
        self.transport.write(answer)
        self.transport.write_eof()
        self.flow.resume_reading()
        self.loop.call_later(LINGER, self.transport.close)


def config(
    app: Any, *, host: str, port: int, log_level: str = "info", **options: Any
) -> uvicorn.Config:
    """The uvicorn configuration every entry point uses (the CLI and the tests)."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=GuardedHttpToolsProtocol,
        ws=CoalescingWebSocketProtocol,
        log_level=log_level,
        lifespan="on",
        timeout_keep_alive=5,
        timeout_graceful_shutdown=10,
        # WebSocket: ping idle peers so dead connections are noticed, bound messages.
        ws_ping_interval=20.0,
        ws_ping_timeout=20.0,
        ws_max_size=1_000_000,
        h11_max_incomplete_event_size=64 * 1024,
        **options,
    )


@contextlib.contextmanager
def switching(seconds: float = SWITCH_SECONDS) -> Iterator[None]:
    """Within the block, a thread holding the interpreter hands it over after ``seconds``
    to one waiting for it (``sys.setswitchinterval``); the setting before is restored.

    A query too large for the event loop, a fleet-wide count's first scan and the
    initial state's parsing run in worker threads. Python's default interval, 5 ms,
    is then what the event loop waits at each of its turns, and with it every answer,
    message and watch event behind it. In bench.ceiling's readers-alone phase at 20,000
    hosts, which holds canFit's first count, the median of the other query kinds' p99s
    went from 5.9-8.3 ms (five runs) to 2.2-3.4 ms (nine) at 1 ms. A thread with nobody
    waiting is not interrupted at all.
    """
    before = sys.getswitchinterval()
    sys.setswitchinterval(seconds)
    try:
        yield
    finally:
        sys.setswitchinterval(before)
