"""GraphQL over WebSocket, on the same ``/graphql`` path: the same policy as HTTP.

:class:`SubscriptionServer` is the ASGI app that accepts the connections: it
refuses a handshake past ``max_connections`` or from an origin not allowed,
authenticates in connection_init and keeps checking while the connection lives,
and closes the connection of a subscriber too slow to keep up (1013). What an
operation runs is gateway.http.streams's (the HTTP endpoint's policy); how each
subprotocol's messages are read and answered, gateway.http.subprotocols's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, cast

import msgspec
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState
from starlette.websockets import WebSocketDisconnected as ClosedAlready
from strawberry import Schema
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.schema import BaseSchema
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL

from gateway.api.context import Context
from gateway.domain.flavors import NO_CATALOG, Catalog
from gateway.http.auth import AllowAll, Authorizer, Decision, bearer_token
from gateway.http.execution import Execution
from gateway.http.frames import ABORT
from gateway.http.operations import Operations
from gateway.http.refusal import refuse, refuse_websocket
from gateway.http.request import TooDeep, loads
from gateway.http.streams import Streams, connection_of, offered
from gateway.http.subprotocols import INVALID, LegacyWSHandler, TextAdapter, TransportWSHandler
from gateway.store.feed import Feed
from gateway.store.source import SyncStatus
from gateway.store.store import Store

log = logging.getLogger(__name__)

__all__ = ["SubscriptionServer"]

#: Seconds a client has, once connected, to send connection_init.
INIT_SECONDS = 10.0
#: Seconds a connection closed for its client's slowness has to take the close frame
#: before it is dropped.
ABORT_AFTER = 10.0


class SubscriptionServer(GraphQL[Context, None]):
    """The WebSocket half of ``/graphql``; HTTP requests never reach it."""

    graphql_transport_ws_handler_class = TransportWSHandler
    graphql_ws_handler_class = LegacyWSHandler
    websocket_adapter_class = TextAdapter

    def __init__(
        self,
        store: Store,
        status: SyncStatus,
        feed: Feed,
        *,
        schema: Schema,
        operations: Operations,
        execution: Execution,
        allowed_origins: Sequence[str] = (),
        coalesce_interval: float = 1.0,
        max_subscriptions_per_connection: int = 20,
        max_connections: int = 500,
        keep_alive_interval: float = 15.0,
        authorizer: Authorizer | None = None,
        recheck_interval: float = 60.0,
        catalog: Catalog = NO_CATALOG,
    ) -> None:
        """``operations`` and ``execution`` are the HTTP endpoint's (one policy)."""
        streams = Streams(schema, operations, execution)
        super().__init__(
            # The handlers call nothing but stream and subscribe (see Streams).
            cast("BaseSchema", streams),
            graphql_ide=None,
            allowed_origins=allowed_origins,
            keep_alive=True,
            keep_alive_interval=keep_alive_interval,
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL),
            connection_init_wait_timeout=timedelta(seconds=INIT_SECONDS),
            max_subscriptions_per_connection=max_subscriptions_per_connection,
        )
        self.store = store
        self.status = status
        self.feed = feed
        self.broadcasts = streams.broadcasts
        self.coalesce_interval = coalesce_interval
        self.limits = operations.limits
        self.max_connections = max_connections
        self.connections = 0
        self.authorizer = authorizer or AllowAll()
        self.recheck_interval = recheck_interval
        self.catalog = catalog
        self._rechecks: set[asyncio.Task[None]] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and self.connections >= self.max_connections:
            # Refuse the handshake before any protocol work.
            reason = f"too many WebSocket connections (the limit is {self.max_connections})"
            await refuse(scope, receive, send, 503, reason)
            return
        self.connections += 1
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.connections -= 1

    @property
    def streams(self) -> int:
        """Subscriptions receiving every change: the feed's, a broadcast's counted by
        its subscribers (its source reads the feed once for them all)."""
        return self.feed.subscribers - len(self.broadcasts) + self.broadcasts.members

    async def reject_websocket(self, request: WebSocket) -> WebSocket:
        """A cross-origin handshake from an origin not allowed: 403, saying so."""
        origin = request.headers.get("origin")
        reason = f"origin {origin!r} may not open a WebSocket here: see --cors-origins"
        await refuse_websocket(request, 403, reason)
        return request

    def encode_json(self, data: object) -> str:
        """A protocol message as text (UTF-8 as it is), by msgspec: a tenth of json.dumps."""
        return msgspec.json.encode(data).decode()

    def decode_json(self, data: str | bytes) -> object:
        """A protocol message, or one of type :data:`INVALID` saying why it is none.

        The handlers close the connection with 4400 and that reason. Nesting is
        bounded before decoding: a deep message would exhaust the decoder's stack.
        """
        try:
            message = loads(data, self.limits.max_json_depth)
        except TooDeep as error:
            return {"type": INVALID, "reason": f"message refused: {error}"}
        except ValueError:
            return {"type": INVALID, "reason": "a message must be valid JSON"}
        if not isinstance(message, dict):
            return {"type": INVALID, "reason": "a message must be a JSON object"}
        return message

    async def on_ws_connect(self, context: Context) -> None:
        """Authenticate in connection_init, then keep checking while the connection lives.

        The token comes from the payload's ``Authorization`` (what browsers can send)
        or the upgrade request's header (what command-line clients send).
        """
        token = _token(context)
        verdict = await self.authorizer.check(token)
        if not verdict.allowed:
            raise ConnectionRejectionError()
        connection = connection_of(context)
        if connection is not None and not isinstance(self.authorizer, AllowAll):
            task = asyncio.create_task(self._recheck(connection, token))
            self._rechecks.add(task)
            task.add_done_callback(self._rechecks.discard)

    async def _recheck(self, connection: WebSocket, token: str | None) -> None:
        """End the connection of a user whose access was revoked (4403, like a refusal)."""
        while connection.application_state is WebSocketState.CONNECTED:
            await asyncio.sleep(self.recheck_interval)
            if connection.application_state is not WebSocketState.CONNECTED:
                return
            verdict = await self.authorizer.check(token)
            if verdict.decision in (Decision.DENIED, Decision.INVALID):
                await connection.close(4403, "Forbidden: access revoked")
                return

    async def get_context(self, request: Any, response: Any) -> Context:
        live = isinstance(request, WebSocket)
        return Context(
            self.store,
            self.status,
            self.feed,
            pinned=not live,
            coalesce_interval=self.coalesce_interval,
            max_page_size=self.limits.max_page_size,
            connection=request if live else None,
            on_lag=_closer(request) if live else None,
            catalog=self.catalog,
        )


def _closer(connection: WebSocket) -> Callable[[], None]:
    """Close the connection of a subscriber that fell too far behind (1013: try again)."""

    def close() -> None:
        log.warning(
            "a subscriber fell more than its queue of changes behind the store: "
            "closing its connection (1013)"
        )
        reason = "too slow to keep up with changes; reconnect to resume"
        _background.add(task := asyncio.create_task(_close(connection, 1013, reason)))
        task.add_done_callback(_background.discard)

    return close


async def _close(connection: WebSocket, code: int, reason: str) -> None:
    """Close ``connection``, and drop it if it is still there :data:`ABORT_AFTER` on.

    The close frame waits behind all the client has not read: from a client that
    reads nothing, the connection and its subscriptions would never go.
    """
    if (abort := offered(connection, ABORT, "abort")) is not None:
        asyncio.get_running_loop().call_later(ABORT_AFTER, abort)
    # The client gone, or dropped meanwhile: the close raises, with nothing left to do.
    with contextlib.suppress(WebSocketDisconnect, ClosedAlready):
        await connection.close(code, reason)


_background: set[asyncio.Task[None]] = set()


def _token(context: Context) -> str | None:
    params = context.connection_params
    if isinstance(params, dict):
        for key in ("Authorization", "authorization"):
            if isinstance(params.get(key), str):
                return bearer_token(params[key])
    if (connection := connection_of(context)) is not None:
        return bearer_token(connection.headers.get("authorization"))
    return None
