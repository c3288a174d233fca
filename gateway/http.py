"""GraphQL over HTTP, following the GraphQL-over-HTTP specification.

Strawberry's own views answer every request with ``application/json``; this
endpoint also speaks ``application/graphql-response+json``, whose status codes
tell a client what went wrong without reading the body: 400 for a request the
server could not even start to execute (bad JSON, bad parameters, a document that
does not parse or validate, variables that do not coerce), 200 once execution ran.
With ``application/json`` every well-formed request gets 200, as the spec asks.

What a request's bytes decide (its parameters, document, operation and cache
digest) is worked out once per distinct request and kept in a bounded cache, as
are parsed and validated documents: a repeated request goes from its bytes to its
cached answer with a few lookups. Execution runs in a worker thread so that one
large query never stalls the event loop (health probes, other clients).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

import anyio.to_thread
from graphql import (
    ASTValidationRule,
    DocumentNode,
    ExecutionResult,
    FieldNode,
    GraphQLError,
    GraphQLFormattedError,
    GraphQLSchema,
    OperationDefinitionNode,
    OperationType,
    execute,
    get_operation_ast,
    parse,
    print_ast,
    specified_rules,
    validate,
    visit,
)
from graphql.language import Visitor
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from gateway.auth import AllowAll, Authorizer, Decision, bearer_token
from gateway.cache import ResponseCache, digest
from gateway.context import Context
from gateway.limits import LimitError, Limits, check_document
from gateway.pages import graphiql_html
from gateway.request import (
    GRAPHQL_RESPONSE,
    JSON,
    HttpError,
    Params,
    RequestError,
    negotiate,
    params_of,
    read_payload,
    wants_graphiql,
)

__all__ = ["GraphQLEndpoint"]

log = logging.getLogger(__name__)

#: Payloads up to this size are remembered with what they decide; dashboards' are under 2 KiB.
MEMO_PAYLOAD_BYTES = 8192


@dataclasses.dataclass(slots=True, eq=False)
class Prepared:
    """What a request's method and payload decide, before any check of its document."""

    params: Params
    document: DocumentNode
    operation: OperationDefinitionNode
    _digest: str | None = dataclasses.field(default=None, init=False)

    def digest(self, text: str) -> str:
        """The request's cache digest, ``text`` being its document as validation printed it."""
        if self._digest is None:
            params = self.params
            self._digest = digest(text, params.operation_name, params.variables)
        return self._digest


class GraphQLEndpoint:
    """The ``/graphql`` endpoint: GET (queries only) and POST, GraphiQL for browsers."""

    def __init__(
        self,
        schema: GraphQLSchema,
        context: Callable[[Request], Context],
        *,
        limits: Limits,
        validation_rules: Sequence[type[ASTValidationRule]] = (),
        document_cache_size: int = 1024,
        graphiql: bool = True,
        cache: ResponseCache | None = None,
        authorizer: Authorizer | None = None,
        uncacheable: frozenset[str] = frozenset(),
    ) -> None:
        self.schema = schema
        self.authorizer = authorizer or AllowAll()
        #: Fields whose answers are not a function of the store snapshot alone.
        self.uncacheable = uncacheable
        self.cache = cache
        self.context = context
        self.limits = limits
        self.rules = (*specified_rules, *validation_rules)
        self.graphiql = graphiql
        self.parse = functools.lru_cache(maxsize=document_cache_size)(self._parse)
        self.validate = functools.lru_cache(maxsize=document_cache_size)(self._validate)
        self._remembered = functools.lru_cache(maxsize=document_cache_size)(self._prepare)
        self.running = 0

    async def handle(self, request: Request) -> Response:
        request_id = os.urandom(8).hex()
        media_type = JSON
        try:
            if self.graphiql and wants_graphiql(request):
                return HTMLResponse(graphiql_html())
            media_type = negotiate(request.headers.get("accept"))
            await self._authorize(request)
            prepared = self.prepare(request.method, await read_payload(request, self.limits))
            response = await self._run(request, prepared, media_type, request_id)
        except HttpError as error:
            request.state.outcome = "rejected"
            response = _error_response(error, media_type)
        except RequestError as error:
            request.state.outcome = "rejected"
            status = error.status or (400 if media_type == GRAPHQL_RESPONSE else 200)
            response = _json({"errors": [e.formatted for e in error.errors]}, status, media_type)
        response.headers["x-request-id"] = request_id
        return response

    async def _authorize(self, request: Request) -> None:
        verdict = await self.authorizer.check(bearer_token(request.headers.get("authorization")))
        if verdict.decision is Decision.INVALID:
            challenge = {"www-authenticate": 'Bearer realm="hypervisor-gateway"'}
            raise HttpError(401, f"unauthenticated: {verdict.reason}", challenge, "UNAUTHENTICATED")
        if verdict.decision is Decision.DENIED:
            raise HttpError(403, f"forbidden: {verdict.reason}", code="FORBIDDEN")
        if verdict.decision is Decision.ERROR:
            raise HttpError(503, verdict.reason, {"retry-after": "5"}, "UNAVAILABLE")
        request.state.user = verdict.user

    def prepare(self, method: str, payload: bytes) -> Prepared:
        """What the request decides; remembered unless its payload is large."""
        if len(payload) > MEMO_PAYLOAD_BYTES:
            return self._prepare(method, payload)
        return self._remembered(method, payload)

    def _prepare(self, method: str, payload: bytes) -> Prepared:
        params = params_of(method, payload)
        document = self.parse(params.query)
        operation = get_operation_ast(document, params.operation_name)
        if operation is None:
            name = params.operation_name
            message = f"unknown operation {name!r}" if name else "operationName is required"
            raise RequestError([GraphQLError(message)])
        return Prepared(params, document, operation)

    async def _run(
        self, request: Request, prepared: Prepared, media_type: str, request_id: str
    ) -> Response:
        params, operation = prepared.params, prepared.operation
        request.state.operation = operation.name.value if operation.name else None
        if operation.operation is not OperationType.QUERY:
            if request.method == "GET":
                raise HttpError(405, "only queries can be sent with GET", {"allow": "POST"})
            raise RequestError(
                [
                    GraphQLError(
                        f"{operation.operation.value} operations are not supported over HTTP; "
                        "subscribe over WebSocket on this path"
                    )
                ]
            )
        text = self.validate(params.query)
        context = self.context(request)
        key = None
        if self.cache is not None and text is not None:
            key = self.cache.key(prepared.digest(text), context.snapshot)
            if (cached := await self.cache.get(key)) is not None:
                request.state.outcome = "ok"
                return _response(cached, 200, media_type)
        result = await self._run_limited(prepared.document, context, params)
        if result.errors and result.data is None and all(e.path is None for e in result.errors):
            # No path: variable coercion failed, nothing was executed.
            raise RequestError(result.errors)
        request.state.outcome = "error" if result.errors else "ok"
        body = _encode(self._format(result, request_id))
        if self.cache is not None and key is not None and not result.errors:
            await self.cache.set(key, body)
        return _response(body, 200, media_type)

    async def _run_limited(
        self, document: DocumentNode, context: Context, params: Params
    ) -> ExecutionResult:
        """Execute in a worker thread, within the concurrency and time limits.

        A thread cannot be stopped: one that overruns is abandoned (its answer
        dropped) but still counts against the concurrency limit until it ends, so
        slow queries can never pile up without bound.
        """
        if self.running >= self.limits.max_concurrent:
            raise HttpError(
                429, "too many queries in progress; retry shortly", {"retry-after": "1"}
            )
        self.running += 1
        loop = asyncio.get_running_loop()

        def work() -> ExecutionResult:
            try:
                return self._execute(document, context, params.variables, params.operation_name)
            finally:
                loop.call_soon_threadsafe(self._finished)

        try:
            return await asyncio.wait_for(
                anyio.to_thread.run_sync(work, abandon_on_cancel=True), self.limits.max_seconds
            )
        except TimeoutError:
            message = f"query took longer than the limit of {self.limits.max_seconds:g} s"
            raise RequestError([LimitError(message)], status=400) from None

    def _finished(self) -> None:
        self.running -= 1

    def _execute(
        self,
        document: DocumentNode,
        context: Any,
        variables: dict[str, Any] | None,
        operation_name: str | None,
    ) -> ExecutionResult:
        result = execute(
            self.schema,
            document,
            context_value=context,
            variable_values=variables,
            operation_name=operation_name,
        )
        assert isinstance(result, ExecutionResult), "resolvers are synchronous"
        return result

    def _parse(self, query: str) -> DocumentNode:
        """Parse once per distinct document (cached; failures are not)."""
        try:
            return parse(query, max_tokens=self.limits.max_tokens)
        except GraphQLError as error:
            status = 400 if "tokens" in error.message else None
            raise RequestError([error], status) from error

    def _validate(self, query: str) -> str | None:
        """Check limits, then validate, once per distinct query (failures are not cached).

        Returns the document as graphql-core prints it (same meaning, same text), for
        cache keys, or None when its answer must not be cached because it reads one
        of the ``uncacheable`` fields. Keyed by the query's text, whose hash Python
        keeps, rather than by its document: a document hashes node by node.
        """
        document = self.parse(query)
        try:
            check_document(document, self.limits)
        except LimitError as error:
            raise RequestError([error], status=400) from error
        errors = validate(self.schema, document, self.rules)
        if errors:
            raise RequestError(errors)
        if _selects_any(document, self.uncacheable):
            return None
        return print_ast(document)

    def _format(self, result: ExecutionResult, request_id: str) -> dict[str, Any]:
        payload: dict[str, Any] = {"data": result.data}
        if result.errors:
            payload["errors"] = [_mask(e, request_id) for e in result.errors]
        return payload


def _selects_any(document: DocumentNode, names: frozenset[str]) -> bool:
    """Whether any selection in ``document`` (fragments included) is one of ``names``."""
    found = False

    class Finder(Visitor):
        def enter_field(self, node: FieldNode, *_: Any) -> None:
            nonlocal found
            found = found or node.name.value in names

    if names:
        visit(document, Finder())
    return found


def _mask(error: GraphQLError, request_id: str) -> GraphQLFormattedError:
    """Errors we raised on purpose read as they are; anything else is our bug."""
    original = error.original_error
    if original is None or isinstance(original, GraphQLError):
        return error.formatted
    log.error("request %s: unexpected error at %s", request_id, error.path, exc_info=original)
    masked = GraphQLError(
        f"internal error (request id {request_id})", path=error.path, nodes=error.nodes
    )
    return masked.formatted


def _encode(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def _response(body: bytes, status: int, media_type: str) -> Response:
    return Response(body, status, media_type=f"{media_type}; charset=utf-8")


def _json(payload: Any, status: int, media_type: str) -> Response:
    return _response(_encode(payload), status, media_type)


def _error_response(error: HttpError, media_type: str) -> Response:
    """A refusal, shaped like a GraphQL response so every client can read it."""
    body: dict[str, Any] = {"message": str(error)}
    if error.code is not None:
        body["extensions"] = {"code": error.code}
    response = _json({"errors": [body]}, error.status, media_type)
    response.headers.update(error.headers)
    return response
