"""A TCP proxy between a client and the API server that can break the network.

A real server cannot be asked to drop one client's connection, refuse it for a
while, or keep a connection open while silently losing its packets. This proxy
does those things at the TCP level; TLS and HTTP pass through untouched, so the
client under test still talks to the real kube-apiserver.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable


class _Connection:
    def __init__(self, *writers: asyncio.StreamWriter) -> None:
        self.writers = writers
        #: Cleared for a connection whose packets are lost from now on.
        self.flowing = asyncio.Event()
        self.flowing.set()

    def abort(self) -> None:
        for writer in self.writers:
            writer.transport.abort()


class TcpProxy:
    """Forwards 127.0.0.1:``port`` to 127.0.0.1:``target``."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = 0
        self.blocked = False
        #: Bytes carried from the target back to clients, over all connections.
        self.returned = 0
        self._connections: set[_Connection] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> TcpProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        for connection in list(self._connections):
            connection.flowing.set()
        self.drop()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    @property
    def address(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def drop(self) -> None:
        """Reset every open connection, as a restarted load balancer would."""
        for connection in list(self._connections):
            connection.abort()

    def block(self) -> None:
        """Reset open connections and every new one until :meth:`unblock`."""
        self.blocked = True
        self.drop()

    def unblock(self) -> None:
        self.blocked = False

    def blackhole(self) -> None:
        """Open connections stay open but carry nothing any more (a dead peer)."""
        for connection in self._connections:
            connection.flowing.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.blocked:
            writer.transport.abort()
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(
                "127.0.0.1", self.target
            )
        except OSError:
            writer.transport.abort()
            return
        connection = _Connection(writer, upstream_writer)
        self._connections.add(connection)
        try:
            await asyncio.gather(
                self._pipe(reader, upstream_writer, connection),
                self._pipe(upstream_reader, writer, connection, self._count_returned),
            )
        finally:
            self._connections.discard(connection)
            connection.abort()

    def _count_returned(self, data: bytes) -> None:
        self.returned += len(data)

    @staticmethod
    async def _pipe(
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        connection: _Connection,
        carried: Callable[[bytes], None] | None = None,
    ) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await reader.read(65536):
                await connection.flowing.wait()
                if carried is not None:
                    carried(data)
                writer.write(data)
                await writer.drain()
        writer.transport.abort()
