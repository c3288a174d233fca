"""GraphQL subscriptions over WebSocket, on the same ``/graphql`` path.

Strawberry implements both protocols in use: ``graphql-transport-ws`` and, for
older clients, the legacy ``graphql-ws``. We only supply the context: a live one
that follows the store (see :class:`gateway.context.Context`), created once per
connection.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any

from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketState
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.extensions import DisableIntrospection, SchemaExtension
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL

from gateway.auth import AllowAll, Authorizer, Decision, bearer_token
from gateway.context import Context
from gateway.feed import Feed
from gateway.flavors import NO_CATALOG, Catalog
from gateway.limits import LimitError, Limits, check_document
from gateway.refusal import refuse, refuse_websocket
from gateway.schema import Extension, build_schema
from gateway.source import SyncStatus
from gateway.store import Store

__all__ = ["SubscriptionServer"]


class DocumentLimits(SchemaExtension):
    """The HTTP endpoint's document limits, for operations sent over WebSocket."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits

    def on_operation(self) -> Iterator[None]:
        self.execution_context.parse_options["max_tokens"] = self.limits.max_tokens
        yield

    def on_validate(self) -> Iterator[None]:
        document = self.execution_context.graphql_document
        if document is not None:
            try:
                check_document(document, self.limits)
            except LimitError as error:
                # Counts as validation already run: the costly rules never see it.
                self.execution_context.pre_execution_errors = [error]
        yield


class SubscriptionServer(GraphQL[Context, None]):
    """The WebSocket half of ``/graphql``; HTTP requests never reach it."""

    def __init__(
        self,
        store: Store,
        status: SyncStatus,
        feed: Feed,
        *,
        limits: Limits,
        introspection: bool = True,
        allowed_origins: Sequence[str] = (),
        coalesce_interval: float = 1.0,
        max_subscriptions_per_connection: int = 20,
        max_connections: int = 500,
        keep_alive_interval: float = 15.0,
        authorizer: Authorizer | None = None,
        recheck_interval: float = 60.0,
        catalog: Catalog = NO_CATALOG,
    ) -> None:
        extensions: list[Extension] = [lambda: DocumentLimits(limits)]
        if not introspection:
            extensions.append(DisableIntrospection)
        super().__init__(
            build_schema(extensions),
            graphql_ide=None,
            allowed_origins=allowed_origins,
            keep_alive=True,
            keep_alive_interval=keep_alive_interval,
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL),
            connection_init_wait_timeout=timedelta(seconds=10),
            max_subscriptions_per_connection=max_subscriptions_per_connection,
        )
        self.store = store
        self.status = status
        self.feed = feed
        self.coalesce_interval = coalesce_interval
        self.limits = limits
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

    async def reject_websocket(self, request: WebSocket) -> WebSocket:
        """A cross-origin handshake from an origin not allowed: 403, saying so."""
        origin = request.headers.get("origin")
        reason = f"origin {origin!r} may not open a WebSocket here: see --cors-origins"
        await refuse_websocket(request, 403, reason)
        return request

    def decode_json(self, data: str | bytes) -> object:
        """Only JSON objects are protocol messages: anything else is refused (4400) like
        text that is not JSON, instead of reaching a handler that indexes it by key."""
        message = json.loads(data)
        if not isinstance(message, dict):
            raise json.JSONDecodeError("a message must be a JSON object", str(data), 0)
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
        if context.connection is not None and not isinstance(self.authorizer, AllowAll):
            task = asyncio.create_task(self._recheck(context.connection, token))
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
            catalog=self.catalog,
        )


def _token(context: Context) -> str | None:
    params = context.connection_params
    if isinstance(params, dict):
        for key in ("Authorization", "authorization"):
            if isinstance(params.get(key), str):
                return bearer_token(params[key])
    if context.connection is not None:
        return bearer_token(context.connection.headers.get("authorization"))
    return None
