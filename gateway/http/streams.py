"""What a GraphQL operation over WebSocket runs: the HTTP endpoint's policy.

Strawberry's WebSocket handlers ask the view's schema for a stream of results, and
that "schema" (:class:`Streams`) is ours: it prepares each operation with the HTTP
endpoint's :class:`gateway.http.operations.Operations` (token, depth, alias,
selection and cost limits, validation, introspection) and runs queries and
mutations through the same :class:`gateway.http.execution.Execution` (slots, time,
response size): one policy, the same errors. Subscriptions, once checked, are
Strawberry's to run, but for those all of whose subscribers get the same messages
(``hypervisorChanged``): the subscribers of one such operation share one run of it
(gateway.http.broadcast).

Persisted queries work as over HTTP: a ``subscribe`` or ``start`` may name its
document by ``extensions.persistedQuery`` alone, and is answered by the same
store (gateway.http.persisted), registered, not found, refused or trusted
alike. Strawberry's handlers pass a message's ``query`` on and drop its
``extensions``, so the handlers (gateway.http.subprotocols) hand the extensions
over inside the query (:class:`Document`, a ``str`` that carries them).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import os
from collections.abc import AsyncGenerator
from typing import Any

import graphql
import msgspec
from graphql import FieldNode, GraphQLError, OperationDefinitionNode, OperationType
from starlette.websockets import WebSocket, WebSocketDisconnect
from starlette.websockets import WebSocketDisconnected as ClosedAlready
from strawberry import Schema
from strawberry.types.execution import ExecutionResult, PreExecutionError
from strawberry.utils.aio import aclosing

from gateway.api.context import Context
from gateway.api.subscriptions import BROADCAST
from gateway.http.broadcast import Broadcast, Broadcasts, send_frames
from gateway.http.execution import Execution, forget_tracebacks, mask
from gateway.http.frames import WRITE_TEXT
from gateway.http.operations import Operations, PreparedOperation
from gateway.http.request import HttpError, Params, RequestError, persisted_hash

__all__ = ["Document", "Streams", "connection_of", "offered"]


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
                connection = connection_of(context)
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
        write = offered(connection, WRITE_TEXT, "write")
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


def connection_of(context: Context) -> WebSocket | None:
    """The WebSocket the context's operation came over, or None (an HTTP request's)."""
    connection = context.connection
    return connection if isinstance(connection, WebSocket) else None


def offered(connection: WebSocket, extension: str, name: str) -> Any:
    """What our server's protocol offers in the scope as ``extension``'s ``name``, or
    None (ASGI lets a scope's extensions be absent or None)."""
    return ((connection.scope.get("extensions") or {}).get(extension) or {}).get(name)


async def send_text_while_connected(websocket: WebSocket, text: str) -> None:
    """Send a message's ``text`` on Starlette's ``websocket``, unless the client has gone
    (as gateway.http.subprotocols.send_while_connected does)."""
    with contextlib.suppress(WebSocketDisconnect, ClosedAlready):
        await websocket.send_text(text)
