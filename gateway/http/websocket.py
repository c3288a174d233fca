"""GraphQL over WebSocket, on the same ``/graphql`` path: the same policy as HTTP.

Strawberry implements both protocols in use: ``graphql-transport-ws`` and, for
older clients, the legacy ``graphql-ws``. What it runs is ours: its handlers ask
the view's schema for a stream of results, and that "schema" (:class:`Streams`)
prepares each operation with the HTTP endpoint's :class:`gateway.http.operations.Operations`
(token, depth, alias, selection and cost limits, validation, introspection) and
runs queries and mutations in a worker thread through the same
:class:`gateway.http.execution.Execution` (slots, time, response size): one policy,
the same errors. Subscriptions, once checked, are Strawberry's to run, but for
those all of whose subscribers get the same messages (``hypervisorChanged``): the
subscribers of one such operation share one run of it (gateway.http.broadcast).

Persisted queries work as over HTTP: a ``subscribe`` or ``start`` may name its
document by ``extensions.persistedQuery`` alone, and is answered by the same
store (gateway.http.persisted), registered, not found, refused or trusted
alike. Strawberry's handlers pass a message's ``query`` on and drop its
``extensions``, so the handlers here hand the extensions over inside the query
(:class:`Document`, a ``str`` that carries them).

Every malformed message closes the connection with the protocol's 4400 and a
reason: a binary frame, text that is not a JSON object, JSON nested too deep to
decode, a message without a type, a subscribe or start whose payload is not an
object. A message of a type the protocol does not know is malformed in
graphql-transport-ws; the legacy graphql-ws answers it, as its reference server
does, with an ``error`` message (BAD_REQUEST) and goes on. In both, a connection
whose connection_init has not come within :data:`INIT_SECONDS` is closed with 4408.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
import os
from collections.abc import AsyncGenerator, Callable, Sequence
from datetime import timedelta
from typing import Any, cast

import graphql
import msgspec
from graphql import FieldNode, GraphQLError, OperationDefinitionNode, OperationType
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState
from starlette.websockets import WebSocketDisconnected as ClosedAlready
from strawberry import Schema
from strawberry.asgi import ASGIWebSocketAdapter, GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.http.exceptions import NonTextMessageReceived, WebSocketDisconnected
from strawberry.schema import BaseSchema
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
)
from strawberry.subscriptions.protocols.graphql_ws.handlers import BaseGraphQLWSHandler
from strawberry.types.execution import ExecutionResult, PreExecutionError
from strawberry.utils.aio import aclosing

from gateway.api.codes import Code
from gateway.api.context import Context
from gateway.api.subscriptions import BROADCAST
from gateway.domain.flavors import NO_CATALOG, Catalog
from gateway.http.auth import AllowAll, Authorizer, Decision, bearer_token
from gateway.http.broadcast import Broadcast, Broadcasts, send_frames
from gateway.http.execution import Execution, forget_tracebacks, mask
from gateway.http.frames import ABORT, WRITE_TEXT
from gateway.http.operations import Operations, PreparedOperation
from gateway.http.refusal import refuse, refuse_websocket
from gateway.http.request import (
    HttpError,
    Params,
    RequestError,
    TooDeep,
    loads,
    persisted_hash,
)
from gateway.store.feed import Feed
from gateway.store.source import SyncStatus
from gateway.store.store import Store

log = logging.getLogger(__name__)

__all__ = ["Streams", "SubscriptionServer", "send_while_connected"]

#: The type of a message that could not be read: no JSON text can produce it.
INVALID = object()
#: Seconds a client has, once connected, to send connection_init.
INIT_SECONDS = 10.0
#: Seconds a connection closed for its client's slowness has to take the close frame
#: before it is dropped.
ABORT_AFTER = 10.0
#: The message types a graphql-ws (legacy) client sends.
LEGACY_TYPES = frozenset({"connection_init", "connection_terminate", "start", "stop"})
#: Strawberry's error for an operation past max_subscriptions_per_connection.
LIMIT_REACHED = "Subscription limit reached"


class Document(str):
    """A message's query (empty when a persisted hash names it), with its extensions,
    and the text its result messages begin with (its id and their type)."""

    extensions: dict[str, Any] | None = None
    prefix: str | None = None

    @classmethod
    def of(cls, message: dict[str, Any], template: str) -> Document:
        """``template``: a result message with ``%s`` for the id, ending where the
        payload begins."""
        payload = message["payload"]
        document = cls(payload.get("query") or "")
        document.extensions = payload.get("extensions")
        document.prefix = template % msgspec.json.encode(message["id"]).decode()
        return document


class Streams:
    """What Strawberry's WebSocket handlers call on the view's schema, with our policy.

    They call :meth:`stream` (graphql-transport-ws) and :meth:`subscribe` (graphql-ws)
    and nothing else; both run every kind of operation.
    """

    def __init__(self, schema: Schema, operations: Operations, execution: Execution) -> None:
        self.schema = schema
        self.operations = operations
        self.execution = execution
        self.broadcasts = Broadcasts(schema._schema, _masking)

    async def stream(
        self,
        query: str | None,
        variable_values: dict[str, Any] | None = None,
        context_value: Any | None = None,
        root_value: Any | None = None,
        operation_name: str | None = None,
        operation_extensions: dict[str, Any] | None = None,
        allowed_operation_types: Any = None,
    ) -> AsyncGenerator[ExecutionResult, None]:
        assert isinstance(context_value, Context)
        # A plain str: the parse and validation caches keep it, not the message's extensions.
        params = Params(str(query or ""), operation_name, variable_values)
        extensions = operation_extensions or getattr(query, "extensions", None)
        return self._results(params, extensions, context_value, getattr(query, "prefix", None))

    subscribe = stream

    async def _results(
        self,
        params: Params,
        extensions: dict[str, Any] | None,
        context: Context,
        prefix: str | None,
    ) -> AsyncGenerator[ExecutionResult, None]:
        try:
            params = dataclasses.replace(params, persisted=persisted_hash(extensions))
            prepared = self.operations.prepare_params(params)
            params = prepared.params  # with the document a persisted hash named
            self.operations.validate(params.query)
            self.operations.check_arguments(prepared)
            cost = self.operations.check_cost(prepared, context.pinned)
        except RequestError as error:
            yield PreExecutionError(data=None, errors=error.errors)
            return
        if prepared.operation.operation is OperationType.SUBSCRIPTION:
            try:
                connection = _connection(context)
                broadcastable = _broadcastable(prepared.operation)
                if prefix is not None and connection is not None and broadcastable:
                    failed = await self._broadcast(prepared, params, context, prefix, connection)
                    if failed is not None:
                        yield failed
                    return
                source = await self.schema.subscribe(
                    params.query, params.variables, context, None, params.operation_name
                )
                if isinstance(source, ExecutionResult):
                    yield source
                    return
                request_id = os.urandom(8).hex()
                async with aclosing(source):
                    async for event in source:
                        yield _masked(event, request_id) if event.errors else event
            except asyncio.CancelledError as ended:
                # A subscription ends by its task's cancellation. The task keeps the
                # error, whose traceback holds the frames it ran through (the last
                # event's snapshot among them) and the task: a cycle, and frozen like
                # the subscription was (see forget_tracebacks).
                forget_tracebacks([ended])
                raise
            return
        request_id = os.urandom(8).hex()
        operation_context = context.for_operation()
        try:
            result = await self.execution.run(
                prepared.document,
                operation_context,
                params.variables,
                params.operation_name,
                lambda result: _masked(result, request_id),
                cost,
            )
        except RequestError as error:
            yield PreExecutionError(data=None, errors=error.errors)
            return
        except HttpError as error:
            code = {"code": error.code}
            yield PreExecutionError(data=None, errors=[GraphQLError(str(error), extensions=code)])
            return
        warnings = operation_context.warnings
        if warnings:
            result.extensions = {"warnings": warnings}
        yield result

    async def _broadcast(
        self,
        prepared: PreparedOperation,
        params: Params,
        context: Context,
        prefix: str,
        connection: WebSocket,
    ) -> PreExecutionError | None:
        """Subscribe to the operation's broadcast, and write its frames until it ends;
        or the errors that stop it before its first event."""
        variables = json.dumps(params.variables or {}, sort_keys=True, default=repr)
        # The catalog by identity: the broadcast's context holds it, so the id is its own.
        key = (params.query, variables, params.operation_name, id(context.catalog))
        started = await self.broadcasts.start(
            key, prepared.document, params.variables, params.operation_name, context
        )
        if not isinstance(started, Broadcast):
            return PreExecutionError(data=None, errors=_masking(started.errors or []))
        # Our server's offer (gateway.http.frames) to write a frame at once.
        write = _offered(connection, WRITE_TEXT, "write")
        with self.broadcasts.member(started, context, prefix, write) as member:
            await send_frames(member, functools.partial(send_text_while_connected, connection))
        return None


def _masked(result: graphql.ExecutionResult | ExecutionResult, request_id: str) -> ExecutionResult:
    """The result with its errors masked, where it was made (see :func:`_masking`); one
    that stopped the operation before it ran still does (an ``error`` message)."""
    errors = _masking(result.errors or [], request_id)
    kind = PreExecutionError if isinstance(result, PreExecutionError) else ExecutionResult
    return kind(data=result.data, errors=errors or None, extensions=result.extensions)


def _masking(errors: list[GraphQLError], request_id: str | None = None) -> list[GraphQLError]:
    """``errors`` masked (gateway.http.execution.mask), under ``request_id`` or one of
    their own (a broadcast event's); done with, their tracebacks are dropped."""
    request_id = request_id or os.urandom(8).hex()
    masked = [mask(e, request_id) for e in errors]
    forget_tracebacks(errors)
    return masked


def _broadcastable(operation: OperationDefinitionNode) -> bool:
    """Whether the subscription's one root field is one all its subscribers may share."""
    selections = operation.selection_set.selections
    return (
        len(selections) == 1
        and isinstance(selections[0], FieldNode)
        and selections[0].name.value in BROADCAST
    )


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


async def send_text_while_connected(websocket: WebSocket, text: str) -> None:
    """Send a message's ``text`` on Starlette's ``websocket``, unless the client has gone
    (as :func:`send_while_connected` does)."""
    with contextlib.suppress(WebSocketDisconnect, ClosedAlready):
        await websocket.send_text(text)


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
        connection = _connection(context)
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


def _offered(connection: WebSocket, extension: str, name: str) -> Any:
    """What our server's protocol offers in the scope as ``extension``'s ``name``, or
    None (ASGI lets a scope's extensions be absent or None)."""
    return ((connection.scope.get("extensions") or {}).get(extension) or {}).get(name)


def _connection(context: Context) -> WebSocket | None:
    connection = context.connection
    return connection if isinstance(connection, WebSocket) else None


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
    if (abort := _offered(connection, ABORT, "abort")) is not None:
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
    if (connection := _connection(context)) is not None:
        return bearer_token(connection.headers.get("authorization"))
    return None
