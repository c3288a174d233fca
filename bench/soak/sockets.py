"""GraphQL over WebSocket in both protocols the gateway speaks, as one small client.

graphql-transport-ws (``subscribe``, ``next``, ``error``, ``complete``) and the
legacy graphql-ws (``start``, ``data``, ``error``, ``complete``, ``stop``; ``ka``
keep-alives) carry the same operations in different words: :class:`Socket`
speaks either and hands back one reading, so that the soak's clients drive both
with the same code. A client that goes away without a word (a laptop closing, a
pod killed) is :meth:`Socket.abort`: the TCP connection dropped, no close frame.
"""

from __future__ import annotations

import json
from typing import Any

import websockets

__all__ = ["LEGACY", "PROTOCOLS", "TRANSPORT", "Socket", "closed", "outcome"]

TRANSPORT = "graphql-transport-ws"
LEGACY = "graphql-ws"
PROTOCOLS = (TRANSPORT, LEGACY)


class Socket:
    """One connection to ``url`` in ``protocol``, acknowledged by the gateway."""

    def __init__(self, ws: websockets.ClientConnection, protocol: str) -> None:
        self._ws = ws
        self.protocol = protocol

    @classmethod
    async def open(cls, url: str, protocol: str) -> Socket:
        ws = await websockets.connect(
            url, subprotocols=[websockets.Subprotocol(protocol)], max_size=None
        )
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        socket = cls(ws, protocol)
        kind, _ = await socket.receive()
        if kind != "connection_ack":
            await ws.close()
            raise RuntimeError(f"the gateway answered connection_init with {kind}")
        return socket

    async def start(self, id: str, query: str, variables: dict[str, object]) -> None:
        kind = "subscribe" if self.protocol == TRANSPORT else "start"
        payload = {"query": query, "variables": variables}
        await self._ws.send(json.dumps({"id": id, "type": kind, "payload": payload}))

    async def stop(self, id: str) -> None:
        kind = "complete" if self.protocol == TRANSPORT else "stop"
        await self._ws.send(json.dumps({"id": id, "type": kind}))

    async def receive(self) -> tuple[str, Any]:
        """The next message but keep-alives: ``next`` (a result), ``error`` (a list of
        errors), ``complete``, or another type as sent; the payload as read."""
        while True:
            message = json.loads(await self._ws.recv())
            kind = message["type"]
            if kind in ("ka", "ping", "pong"):
                continue
            payload = message.get("payload")
            if kind == "data":
                return "next", payload
            if kind == "error" and not isinstance(payload, list):
                return "error", [payload]
            return kind, payload

    async def answer(self, query: str, variables: dict[str, object]) -> dict[str, Any]:
        """One query's answer, a refusal read as HTTP's ``{"errors": [...]}``."""
        await self.start("1", query, variables)
        kind, payload = await self.receive()
        if kind == "error":
            return {"errors": payload}
        if kind != "next":
            raise RuntimeError(f"the gateway answered a query with {kind}")
        answer: dict[str, Any] = payload
        kind, _ = await self.receive()  # a query's one result is followed by its end
        if kind != "complete":
            raise RuntimeError(f"the gateway followed a query's result with {kind}")
        return answer

    async def close(self) -> None:
        await self._ws.close()

    def abort(self) -> None:
        """Drop the connection without a close frame."""
        self._ws.transport.abort()


def outcome(answer: dict[str, Any]) -> str:
    """``ok``, or the first error's code."""
    errors = answer.get("errors")
    if not errors:
        return "ok"
    return str((errors[0].get("extensions") or {}).get("code", "no code"))


def closed(error: websockets.ConnectionClosed) -> str:
    """How the gateway ended a connection: its close code and reason, or none sent."""
    if error.rcvd is None:
        return "connection dropped"
    return f"closed {error.rcvd.code} {error.rcvd.reason}".strip()
