"""GraphQL over HTTP, following the GraphQL-over-HTTP specification.

Strawberry's own views answer every request with ``application/json``; this
endpoint also speaks ``application/graphql-response+json``, whose status codes
tell a client what went wrong without reading the body: 400 for a request the
server could not even start to execute (bad JSON, bad parameters, a document that
does not parse or validate, variables that do not coerce), 200 once execution ran.
With ``application/json`` every well-formed request gets 200, as the spec asks.

An executed answer is compressed by the client's ``Accept-Encoding``
(gateway.http.compression) and, over GET, tagged for revalidation
(gateway.http.conditional); the response cache keeps both the tag and the
compressed bytes with the answer, so its short path stays a lookup.

Requests are worked out once per distinct payload and document (gateway.http.operations),
and execution and serialization run in a worker thread (gateway.http.execution), within
the cost, time, size and concurrency limits, so that one large query never stalls
the event loop (health probes, other clients); only operations whose estimated
cost is small, a lookup or the fleet's totals, run on the loop itself.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any, NamedTuple

import msgspec
from graphql import (
    ExecutionResult,
    GraphQLError,
    OperationType,
)
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from gateway.api.budget import TOO_LARGE
from gateway.api.codes import Code
from gateway.api.context import Context
from gateway.api.limits import LimitError
from gateway.http.assets import graphiql_html
from gateway.http.auth import AllowAll, Authorizer, bearer_token, refusal
from gateway.http.cache import Entry, ResponseCache
from gateway.http.compression import MIN_BYTES, choose, compress
from gateway.http.conditional import NOT_MODIFIED, cache_headers, etag, matches, tag_of
from gateway.http.execution import Execution, mask
from gateway.http.operations import Operations, PreparedOperation
from gateway.http.request import (
    GRAPHQL_RESPONSE,
    JSON,
    HttpError,
    RequestError,
    negotiate,
    read_payload,
    wants_graphiql,
)

__all__ = ["GraphQLEndpoint"]

log = logging.getLogger(__name__)


class Answer(NamedTuple):
    """A response: its status, UTF-8 body, media type, and headers beyond the usual."""

    status: int
    body: bytes
    media_type: str
    headers: tuple[tuple[str, str], ...] = ()


class GraphQLEndpoint:
    """The ``/graphql`` endpoint: GET (queries only) and POST, GraphiQL for browsers."""

    def __init__(
        self,
        operations: Operations,
        execution: Execution,
        context: Callable[[Request], Context],
        *,
        graphiql: bool = True,
        cache: ResponseCache | None = None,
        authorizer: Authorizer | None = None,
    ) -> None:
        """``operations`` and ``execution`` are shared with the WebSocket transport."""
        self.schema = operations.schema
        self.operations = operations
        self.execution = execution
        self.authorizer = authorizer or AllowAll()
        #: With authentication on, answers differ by user: shared caches must not keep them.
        self.private = not isinstance(self.authorizer, AllowAll)
        self.cache = cache
        self.context = context
        self.limits = operations.limits
        self.graphiql = graphiql

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI: every answer goes out as two messages, with no Response object to build."""
        request = Request(scope, receive)
        request_id = os.urandom(8).hex()
        try:
            answer = await self._answer(request, request_id)
        except Exception:
            request.state.outcome = "failed"  # a bug: the server answers 500
            raise
        headers = [
            (b"x-request-id", request_id.encode()),
            *((name.encode("latin-1"), value.encode("latin-1")) for name, value in answer.headers),
        ]
        if answer.status != NOT_MODIFIED:
            headers.append((b"content-length", b"%d" % len(answer.body)))
            headers.append((b"content-type", f"{answer.media_type}; charset=utf-8".encode()))
        await send({"type": "http.response.start", "status": answer.status, "headers": headers})
        await send({"type": "http.response.body", "body": answer.body})

    async def _answer(self, request: Request, request_id: str) -> Answer:
        media_type = JSON
        try:
            if self.graphiql and wants_graphiql(request):
                return Answer(200, graphiql_html().encode(), "text/html")
            media_type = negotiate(request.headers.get("accept"))
            await self._authorize(request)
            payload = await read_payload(request, self.limits)
            prepared = self.operations.prepare(request.method, payload)
            return await self._run(request, prepared, media_type, request_id)
        except HttpError as error:
            request.state.outcome = "rejected"
            return _refusal(error, media_type)
        except RequestError as error:
            request.state.outcome = "rejected"
            status = error.status or (400 if media_type == GRAPHQL_RESPONSE else 200)
            return _json({"errors": [e.formatted for e in error.errors]}, status, media_type)

    async def _authorize(self, request: Request) -> None:
        verdict = await self.authorizer.check(bearer_token(request.headers.get("authorization")))
        refused = refusal(verdict)
        if refused is not None:
            raise HttpError(refused.status, refused.message, refused.headers, refused.code)
        request.state.user = verdict.user

    async def _run(
        self, request: Request, prepared: PreparedOperation, media_type: str, request_id: str
    ) -> Answer:
        params, operation = prepared.params, prepared.operation
        request.state.operation = prepared.name
        if operation.operation is not OperationType.QUERY:
            if request.method == "GET":
                raise HttpError(405, "only queries can be sent with GET", {"allow": "POST"})
            if operation.operation is OperationType.SUBSCRIPTION:
                message = "subscriptions are not answered over HTTP; subscribe over WebSocket"
                code = Code.SUBSCRIPTION_NEEDS_WEBSOCKET.value
                raise RequestError([GraphQLError(message, extensions={"code": code})])
        text = self.operations.validate(params.query)
        context = self.context(request)
        encoding = choose(request.headers.get("accept-encoding"))
        key = None
        if self.cache is not None and text is not None:
            key = self.cache.key(prepared.digest(text), context.pinned)
            cached = await self._cached(self.cache, key, context, encoding)
            if cached is not None:
                request.state.outcome = "ok"
                return self._answer_with(request, *cached, media_type)
        self.operations.check_arguments(prepared)
        cost = self.operations.check_cost(prepared, context.pinned)
        body, failed = await self.execution.run(
            prepared.document,
            context,
            params.variables,
            params.operation_name,
            lambda result: self._finish(result, request_id, context.warnings),
            cost,
        )
        request.state.outcome = "error" if failed else "ok"
        kept = None if failed else key
        # The tag, a digest of the whole answer, only where it is used.
        tag = tag_of(body) if kept is not None or request.method == "GET" else ""
        entry = Entry(tag, body)
        if self.cache is not None and kept is not None:
            await self.cache.set(kept, entry, context.reads())
        return self._answer_with(request, *await self._encoded(entry, encoding, kept), media_type)

    async def _cached(
        self, cache: ResponseCache, key: str, context: Context, encoding: str | None
    ) -> tuple[Entry, str | None] | None:
        """The kept answer for ``key`` and the encoding of its bytes (see :meth:`_encoded`)."""
        if encoding is not None:
            found = await cache.get(key, context.pinned, encoding)
            if found is not None:
                return found, encoding
        entry = await cache.get(key, context.pinned)
        return None if entry is None else await self._encoded(entry, encoding, key)

    async def _encoded(
        self, entry: Entry, encoding: str | None, key: str | None
    ) -> tuple[Entry, str | None]:
        """``entry`` compressed with ``encoding`` and kept beside it under ``key``, or as it
        is (encoding None) when small or not asked for."""
        if encoding is None or len(entry.body) < MIN_BYTES:
            return entry, None
        compressed = Entry(entry.tag, await compress(entry.body, encoding))
        if self.cache is not None and key is not None:
            await self.cache.set(key, compressed, encoding=encoding)
        return compressed, encoding

    def _answer_with(
        self, request: Request, entry: Entry, encoding: str | None, media_type: str
    ) -> Answer:
        """The answer, or 304 to a GET whose client holds it already."""
        headers = cache_headers(request.method, self.private)
        if request.method == "GET":
            headers = (*headers, ("etag", etag(entry.tag, encoding)))
            if matches(request.headers.get("if-none-match"), entry.tag):
                return Answer(NOT_MODIFIED, b"", media_type, headers)
        if encoding is not None:
            headers = (*headers, ("content-encoding", encoding))
        return Answer(200, entry.body, media_type, headers)

    def _finish(
        self, result: ExecutionResult, request_id: str, warnings: list[dict[str, str]]
    ) -> tuple[bytes, bool]:
        """The answer's body, and whether it has errors: in the worker thread for a large one."""
        body = _encode(self._format(result, request_id, warnings))
        if len(body) > self.limits.max_response_bytes:
            message = f"response larger than the limit of {self.limits.max_response_bytes} bytes"
            raise RequestError([LimitError(message, extensions={"code": TOO_LARGE})], 400)
        return body, bool(result.errors)

    def _format(
        self, result: ExecutionResult, request_id: str, warnings: list[dict[str, str]]
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {"data": result.data}
        if result.errors:
            payload["errors"] = [mask(e, request_id).formatted for e in result.errors]
        if warnings:
            payload["extensions"] = {"warnings": warnings}
        return payload


def _encode(payload: Any) -> bytes:
    """Compact UTF-8 JSON. msgspec, not the standard library: a 5,000-host answer
    (460 kB) took json.dumps 17.7 ms, msgspec 1.4 ms, the same bytes."""
    return msgspec.json.encode(payload)


#: A refusal is never kept: a persisted query not found now is registered a moment later.
NO_STORE = (("cache-control", "no-store"),)


def _json(payload: Any, status: int, media_type: str) -> Answer:
    return Answer(status, _encode(payload), media_type, NO_STORE)


def _refusal(error: HttpError, media_type: str) -> Answer:
    """A refusal, shaped like a GraphQL response so every client can read it."""
    body: dict[str, Any] = {"message": str(error)}
    if error.code is not None:
        body["extensions"] = {"code": error.code}
    headers = (*NO_STORE, *error.headers.items())
    return Answer(error.status, _encode({"errors": [body]}), media_type, headers)
