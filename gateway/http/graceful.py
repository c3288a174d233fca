"""Stopping the gateway without dropping anyone.

On SIGTERM (a pod being deleted, ``docker stop``) uvicorn stops accepting,
lets requests in progress finish, and only then runs the app's shutdown. It
treats WebSockets as it must a connection it knows nothing about: it fails them
with 1012. Subscription clients deserve better: each one gets a proper close
handshake with 1001 (going away), which the protocols' clients read as "connect
again, elsewhere", before uvicorn's own shutdown begins.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import time
from types import FrameType

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.http import server

__all__ = ["GracefulServer", "WebSocketTracker", "serve"]

GOING_AWAY = 1001


class _Connection:
    """One WebSocket, and whether it is being closed."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.closing = False
        self.ended = asyncio.Event()

    async def send(self, message: Message) -> None:
        if self.closing:
            # Closed by the server: whatever the app still had to say goes nowhere,
            # rather than failing inside the app (the client is leaving anyway).
            return
        if message["type"] == "websocket.close":
            self.closing = True
        await self._send(message)

    async def close(self, code: int, reason: str) -> None:
        if self.closing:
            return
        self.closing = True
        # Before the handshake was accepted, a close refuses it (HTTP 403).
        await self._send({"type": "websocket.close", "code": code, "reason": reason})


class WebSocketTracker:
    """Wraps an ASGI app and knows each of its open WebSockets, to close them at shutdown."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.open: set[_Connection] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        connection = _Connection(send)
        self.open.add(connection)
        try:
            await self.app(scope, receive, connection.send)
        finally:
            self.open.discard(connection)
            connection.ended.set()

    async def close_all(self, code: int, reason: str) -> None:
        """Close every WebSocket, then wait until the app has let go of each."""
        connections = list(self.open)
        # One connection that fails to close (its client vanished) must not stop the others.
        await asyncio.gather(*(c.close(code, reason) for c in connections), return_exceptions=True)
        await asyncio.gather(*(c.ended.wait() for c in connections))


class GracefulServer(uvicorn.Server):
    """uvicorn, closing WebSockets with 1001 before its own shutdown."""

    def __init__(self, config: uvicorn.Config, websockets: WebSocketTracker) -> None:
        super().__init__(config)
        self.websockets = websockets

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for listener in self.servers:
            listener.close()  # no new connection while the open ones are closed
        grace = self.config.timeout_graceful_shutdown
        started = time.monotonic()
        # What is still open after the grace period is left to uvicorn's shutdown.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace):
                await self.websockets.close_all(GOING_AWAY, "server shutting down")
        if grace is not None:
            # The grace period is one, for subscriptions and requests together.
            self.config.timeout_graceful_shutdown = max(
                0, int(grace - (time.monotonic() - started))
            )
        await super().shutdown(sockets)


def serve(app: ASGIApp, *, host: str, port: int, log_level: str) -> None:
    """Serve until SIGTERM or SIGINT, then shut down gracefully and return."""
    tracker = WebSocketTracker(app)
    # Logging is the gateway's (gateway.logs); its request log replaces uvicorn's.
    config = server.config(
        tracker, host=host, port=port, log_level=log_level, log_config=None, access_log=False
    )
    graceful = GracefulServer(config, tracker)
    # uvicorn raises the signal it stopped on again once it is done, so that the
    # previous handler decides the exit status. That handler is this no-op: a
    # shutdown that went as asked for ends with status 0, not as killed by SIGTERM.
    signals = (signal.SIGTERM, signal.SIGINT)
    previous = {sig: signal.signal(sig, _stopped) for sig in signals}
    try:
        with server.switching():
            graceful.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _stopped(sig: int, frame: FrameType | None) -> None:
    """The signal has already been handled by the server's graceful shutdown."""
