"""Running the app under uvicorn, hardened against slow and idle clients.

uvicorn times out idle keep-alive connections but not a client that sends its
request headers slowly (slowloris): such connections would pile up for ever. The
protocol below gives every request a deadline for its headers and closes the
connection with a 408 when it passes. Request bodies are bounded in time by the
GraphQL endpoint itself.
"""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["HEADER_TIMEOUT", "config"]

#: Seconds a client has to send a request's headers.
HEADER_TIMEOUT = 10.0

_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 33\r\nconnection: close\r\n\r\nrequest headers sent too slowly\r\n"
)


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline for request headers."""

    header_timeout = HEADER_TIMEOUT

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

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
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.write(_TIMEOUT_RESPONSE)
            self.transport.close()


def config(
    app: Any, *, host: str, port: int, log_level: str = "info", **options: Any
) -> uvicorn.Config:
    """The uvicorn configuration every entry point uses (the CLI and the tests)."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=GuardedHttpToolsProtocol,
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
