"""The two WebSocket subprotocols' message handling: Strawberry's, stricter.

Strawberry implements both protocols in use: ``graphql-transport-ws`` and, for
older clients, the legacy ``graphql-ws``. The handlers here check each message
before Strawberry's handle it, hand a subscribe's or start's query on as a
:class:`gateway.http.streams.Document`, and take a client's leaving mid-send for
no error (:func:`send_while_connected`).

Every malformed message closes the connection with the protocol's 4400 and a
reason: a binary frame, text that is not a JSON object, JSON nested too deep to
decode, a message without a type, a subscribe or start whose payload is not an
object (what the server's ``decode_json`` or :class:`TextAdapter` could not read
comes as a message of type :data:`INVALID`). A message of a type the protocol does
not know is malformed in graphql-transport-ws; the legacy graphql-ws answers it,
as its reference server does, with an ``error`` message (BAD_REQUEST) and goes on.
In both, a connection whose connection_init has not come within the server's
``INIT_SECONDS`` (gateway.http.websocket) is closed with 4408.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from typing import Any

from starlette.websockets import WebSocketDisconnect
from starlette.websockets import WebSocketDisconnected as ClosedAlready
from strawberry.asgi import ASGIWebSocketAdapter
from strawberry.http.exceptions import NonTextMessageReceived, WebSocketDisconnected
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
)
from strawberry.subscriptions.protocols.graphql_ws.handlers import BaseGraphQLWSHandler

from gateway.api.codes import Code
from gateway.api.context import Context
from gateway.http.streams import Document

__all__ = [
    "INVALID",
    "LegacyWSHandler",
    "TextAdapter",
    "TransportWSHandler",
    "send_while_connected",
]

#: The type of a message that could not be read: no JSON text can produce it.
INVALID = object()
#: The message types a graphql-ws (legacy) client sends.
LEGACY_TYPES = frozenset({"connection_init", "connection_terminate", "start", "stop"})
#: Strawberry's error for an operation past max_subscriptions_per_connection.
LIMIT_REACHED = "Subscription limit reached"


class TransportWSHandler(BaseGraphQLTransportWSHandler[Context, None]):
    """graphql-transport-ws, closing with 4400 on every message it cannot read."""

    async def handle_message(self, message: Any) -> None:
        if (reason := _malformed(message)) is not None:
            await self.handle_invalid_message(reason)
            return
        if message["type"] == "subscribe":
            if (reason := _bad_payload(message)) is not None:
                await self.handle_invalid_message(reason)
                return
            message["payload"]["query"] = Document.of(message, '{"id":%s,"type":"next","payload":')
        await super().handle_message(message)

    async def send_message(self, message: Any) -> None:
        await send_while_connected(self.websocket, _limit_coded(message))


class LegacyWSHandler(BaseGraphQLWSHandler[Context, None]):
    """graphql-ws (legacy), closing with 4400 where it would drop the connection, and
    answering a type it would ignore."""

    _init_deadline: asyncio.Task[None] | None = None

    async def handle(self) -> None:
        # Strawberry's handler waits for connection_init for ever, and a connection
        # that never sends it holds its place among max_connections.
        self._init_deadline = asyncio.create_task(self._close_uninitialised())
        try:
            await super().handle()
        finally:
            self._init_deadline.cancel()

    async def _close_uninitialised(self) -> None:
        """Close with 4408 after the connection_init deadline, as graphql-transport-ws."""
        await asyncio.sleep(self.view.connection_init_wait_timeout.total_seconds())
        with contextlib.suppress(WebSocketDisconnect, ClosedAlready):
            await self.websocket.close(code=4408, reason="Connection initialisation timeout")

    async def handle_message(self, message: Any) -> None:
        if (reason := _malformed(message)) is None and message["type"] == "start":
            reason = _bad_payload(message)
        if reason is not None:
            await self.websocket.close(code=4400, reason=reason)
            return
        if message["type"] == "connection_init" and self._init_deadline is not None:
            self._init_deadline.cancel()
        if message["type"] not in LEGACY_TYPES:
            await self.send_message(_unknown_type(message))
            return
        if message["type"] == "start":
            message["payload"]["query"] = Document.of(message, '{"type":"data","id":%s,"payload":')
        await super().handle_message(message)

    async def send_message(self, message: Any) -> None:
        await send_while_connected(self.websocket, _limit_coded(message))


async def send_while_connected(websocket: Any, message: Any) -> None:
    """Send ``message``, unless the client has gone.

    A subscriber that drops its connection mid-stream is no fault of the gateway's,
    but Strawberry's handlers let the send's error out of the operation's task: an
    error and its traceback in the log per subscriber that left (graphql-ws's task
    never even awaited). The connection's end cancels its operations all the same.
    Strawberry turns the client's leaving into its WebSocketDisconnected; a send after
    the server's own close frame is Starlette's of the same name.
    """
    with contextlib.suppress(WebSocketDisconnected, ClosedAlready):
        await websocket.send_json(message)


class TextAdapter(ASGIWebSocketAdapter):
    """Strawberry's adapter, reading a binary frame as a message of type :data:`INVALID`:
    the legacy handler would close with 1002, graphql-transport-ws with 4400."""

    async def iter_json(
        self, *, ignore_parsing_errors: bool = False
    ) -> AsyncGenerator[object, None]:
        try:
            async for message in super().iter_json(ignore_parsing_errors=ignore_parsing_errors):
                yield message
        except NonTextMessageReceived:
            yield {"type": INVALID, "reason": "WebSocket message type must be text"}


def _unknown_type(message: dict[str, Any]) -> dict[str, Any]:
    """The legacy reference server's answer to a type it does not know (under the
    message's id, if it has one), with a code."""
    error = {"message": f"unknown message type {message['type']!r}"}
    answer = {"type": "error", "payload": {**error, "extensions": {"code": Code.BAD_REQUEST.value}}}
    if "id" in message:
        answer["id"] = message["id"]
    return answer


def _limit_coded(message: Any) -> Any:
    """``message``, Strawberry's error for a subscription past the limit given the code
    of a limit on what runs at once (it has none)."""
    if message.get("type") == "error":
        payload = message["payload"]
        for error in payload if isinstance(payload, list) else [payload]:
            if error.get("message") == LIMIT_REACHED:
                error.setdefault("extensions", {"code": Code.TOO_MANY_REQUESTS.value})
    return message


def _malformed(message: Any) -> str | None:
    """Why a decoded message cannot be handled, or None."""
    if message.get("type") is INVALID:
        return str(message["reason"])
    if not isinstance(message.get("type"), str):
        return "a message needs a string type"
    if "id" in message and not isinstance(message["id"], str):
        return "a message id must be a string"
    return None


def _bad_payload(message: dict[str, Any]) -> str | None:
    payload = message.get("payload")
    if not isinstance(message.get("id"), str):
        return f"{message['type']} needs a string id"
    if not isinstance(payload, dict):
        return f"{message['type']} payload must be an object"
    extensions = payload.get("extensions")
    if extensions is not None and not isinstance(extensions, dict):
        return "extensions must be an object"
    persisted = extensions is not None and "persistedQuery" in extensions
    if not isinstance(payload.get("query"), str) and not (persisted and "query" not in payload):
        return f"{message['type']} payload needs a string query (or a persistedQuery)"
    if payload.get("variables") is not None and not isinstance(payload["variables"], dict):
        return "variables must be an object"
    if payload.get("operationName") is not None and not isinstance(payload["operationName"], str):
        return "operationName must be a string"
    return None
